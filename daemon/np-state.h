#pragma once
/* Placeholder: the backend owner defines the state-file API here. */
#include "np-backend.h"
