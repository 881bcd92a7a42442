#include "draftscope/errors.h"
