#pragma once
#include "np-manager.h"
