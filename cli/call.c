/*
** call.c -- a tpusim command run as a function call (call.h): the
** program's dispatch with its report and messages routed to the caller.
*/
#include <stdio.h>
#include <string.h>

#include "cli/call.h"
#include "cli/cli_int.h"

int tpu_cli_run(tpu_cli_call *c) {
  c->report = NULL;
  c->err[0] = '\0';
  const cli_command *cmd = c->argc > 0 ? cli_command_find(c->argv[0]) : NULL;
  if (!cmd) {
    snprintf(c->err, sizeof c->err, "tpusim: unknown command '%s'", c->argc > 0 ? c->argv[0] : "");
    return 2;
  }
  char msg[sizeof c->err];
  cli_capture_errors(msg, sizeof msg);
  cli_capture_report(&c->report);
  cli_on_step(c->on_step, c->ud);
  const int rc = cmd->fn(c->argc, c->argv);
  cli_on_step(NULL, NULL);
  cli_capture_report(NULL);
  cli_capture_errors(NULL, 0);
  if (msg[0]) snprintf(c->err, sizeof c->err, "tpusim %s: %.4000s", cmd->name, msg);
  return rc;
}
