#include "np-config.h"
