#include "np-sample.h"
