/*
** commands.c -- the one table of tpusim's commands: the program's dispatch
** (main.c) and the in-process calls (call.c) both read it.
*/
#include <string.h>

#include "cli/cli_int.h"

const cli_command cli_commands[] = {
  { "info",     cli_cmd_info,     "print a chip configuration and its peak figures" },
  { "matmul",   cli_cmd_matmul,   "run one GEMM on one core's MXU and report cycles and error" },
  { "model",    cli_cmd_model,    "summarize a model: layers, output shapes, parameters, MXU GEMMs and step FLOPs" },
  { "pipeline", cli_cmd_pipeline, "simulate an input pipeline's host time against a consumer (datafeed)" },
  { "plot",     cli_cmd_plot,     "draw PNGs from a sweep's results.csv with gnuplot (the script beside each PNG)" },
  { "run",      cli_cmd_run,      "run a JSON program on the chip and report every core's stalls" },
  { "scalesim", cli_cmd_scalesim, "run SCALE-Sim v2 config and topology files; write its reports (compute, bandwidth, access)" },
  { "sweep",    cli_cmd_sweep,    "run train, matmul, run or pipeline over a grid of options on host threads: resumable tidy CSV, shards" },
  { "train",    cli_cmd_train,    "train a model on the simulated chip, data-parallel across its cores" },
  { "viz",      cli_cmd_viz,      "watch the wavefront cross an MXU and where each core stalls (SDL2 window or PNG frames)" },
};
const int cli_ncommands = (int)(sizeof cli_commands / sizeof cli_commands[0]);

const cli_command *cli_command_find(const char *name) {
  for (int i = 0; i < cli_ncommands; i++)
    if (!strcmp(name, cli_commands[i].name)) return &cli_commands[i];
  return NULL;
}
