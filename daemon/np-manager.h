#pragma once
#include "np-config.h"
