#include "np-backend.h"
