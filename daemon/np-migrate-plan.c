#include "np-migrate-plan.h"
