#include "np-topology.h"
