#include "np-migrate.h"
