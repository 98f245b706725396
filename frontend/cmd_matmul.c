/* cmd_matmul.c -- placeholder until the MXU lands (replaced in this same change). */
#include "frontend/fe_int.h"
int fe_cmd_matmul(int argc, char **argv) { (void)argc; (void)argv; return fe_runtime_error("matmul", "not built yet"); }
