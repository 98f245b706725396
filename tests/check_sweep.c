/*
** check_sweep.c -- the sweep engine (sweep/sweep.h) on a command of the
** test's own, "fake": its CSV comes from the rows the runs fill, typed
** (integers as %lld, reals as %.10g, null and failures as empty fields,
** strings quoted), the same bytes for every -j and after a resume; a
** column the run leaves without a value, fills with another type or does
** not declare fails the point instead of emptying the column, and a
** journal row missing a column, or an entry that is not as the sweep
** writes them (an "ok" without its report), is refused; shards merge into the one
** process's CSV; the definition lists the table's commands.
*/
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep/sweep.h"
#include "tests/test_util.h"

/* {==================================================================
** The fake command: --x N (an integer axis), --mode full|missing|wrong|
** undeclared|fail, --json. Its run fills its row from x.
** ================================================================== */
typedef struct fake_opts { long x; const char *mode; } fake_opts;

static _Thread_local char *msg_buf;
static _Thread_local size_t msg_cap;
static void capture(char *buf, size_t cap) {
  msg_buf = buf;
  msg_cap = cap;
  if (buf && cap) buf[0] = 0;
}
static int say(int rc, const char *text) {
  if (msg_buf) snprintf(msg_buf, msg_cap, "%s", text);
  return rc;
}

static int fake_parse(int argc, char **argv, void *o) {
  fake_opts *f = o;
  f->mode = "full";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) continue;
    if (i + 1 == argc) return say(2, "a flag without its value");
    if (!strcmp(argv[i], "--x")) f->x = strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--mode")) f->mode = argv[++i];
    else return say(2, "unknown option");
  }
  return TPU_SWEEP_GO;
}

static int fake_run(const void *o, struct json_t **report, tpu_sweep_row *row) {
  const fake_opts *f = o;
  *report = NULL;
  if (!strcmp(f->mode, "fail")) return say(1, "it failed, as asked");
  if (strcmp(f->mode, "silent") && !(*report = json_pack("{s:I}", "x", (json_int_t)f->x))) return say(1, "out of memory");
  tpu_sweep_row_int(row, "n", f->x * 1000000000000LL);
  if (strcmp(f->mode, "missing")) tpu_sweep_row_real(row, "half", (double)f->x / 3.0);
  if (!strcmp(f->mode, "wrong")) tpu_sweep_row_int(row, "word", 7);
  else tpu_sweep_row_str(row, "word", f->x % 2 ? "odd, \"x\"" : "even", f->x % 2 ? 8 : 4);
  tpu_sweep_row_null(row, "none");
  if (!strcmp(f->mode, "undeclared")) tpu_sweep_row_int(row, "extra", 1);
  return 0;
}

static const tpu_sweep_field FIELDS[] = {
  { "n", TPU_SWEEP_INT }, { "half", TPU_SWEEP_REAL }, { "word", TPU_SWEEP_STR }, { "none", TPU_SWEEP_REAL },
};
static const tpu_sweep_cmd FAKE = { "fake", sizeof(fake_opts), false, fake_parse, NULL, fake_run, FIELDS, 4, NULL, 0 };
static const tpu_sweep_cmd OTHER = { "other", sizeof(fake_opts), true, fake_parse, NULL, fake_run, FIELDS, 4, NULL, 0 };
static const tpu_sweep_cmd *const CMDS[] = { &FAKE, &OTHER };
static const tpu_sweep_env ENV = { CMDS, 2, capture, NULL };
/* }================================================================== */

static char err[2048];

/* Parses argv (NULL-terminated, COMMAND first) into d; must succeed. */
static void def_of(tpu_sweep_def *d, const char **argv) {
  int argc = 0;
  while (argv[argc]) argc++;
  ck_assert_msg(tpu_sweep_def_parse(d, &ENV, argc, (char **)argv, err, sizeof err) == TPU_OK, "%s", err);
}

static char *file_text(const char *path) {
  static char buf[8192];
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "%s", path);
  const size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

static tpu_sweep_counts run_into(const char *dir, const char **argv, long jobs) {
  tpu_sweep_def d;
  tpu_sweep_counts n;
  def_of(&d, argv);
  ck_assert_msg(tpu_sweep_run(&d, dir, jobs, NULL, &n, err, sizeof err) == TPU_OK, "%s", err);
  tpu_sweep_def_free(&d);
  return n;
}

START_TEST(Typed_rows_make_the_csv_the_same_for_every_job_count) {
  tu_scratch("sweep");
  static const char *argv[] = { "fake", "--x", "1,2,3,4", "--mode", "full", NULL };
  tpu_sweep_counts n = run_into(tu_path("j1"), argv, 1);
  ck_assert_int_eq(n.run, 4);
  ck_assert_int_eq(n.failed, 0);
  ck_assert_str_eq(file_text(tu_path("j1/results.csv")),
                   "point,x,status,n,half,word,none,error\n"
                   "0,1,ok,1000000000000,0.3333333333,\"odd, \"\"x\"\"\",,\n"
                   "1,2,ok,2000000000000,0.6666666667,even,,\n"
                   "2,3,ok,3000000000000,1,\"odd, \"\"x\"\"\",,\n"
                   "3,4,ok,4000000000000,1.333333333,even,,\n");
  char want[8192];
  snprintf(want, sizeof want, "%s", file_text(tu_path("j1/results.csv")));
  run_into(tu_path("j3"), argv, 3);
  ck_assert_str_eq(file_text(tu_path("j3/results.csv")), want);
  n = run_into(tu_path("j3"), argv, 2);           /* resumed: nothing left to run, the same bytes */
  ck_assert_int_eq(n.run, 0);
  ck_assert_int_eq(n.done_before, 4);
  ck_assert_str_eq(file_text(tu_path("j3/results.csv")), want);
}
END_TEST

/* The one point of `fake --x 1 --mode MODE` fails with a message holding
** 'why', and its CSV row is a failed one. */
static void point_fails(const char *mode, const char *why) {
  tu_scratch("sweep");
  const char *argv[] = { "fake", "--x", "1", "--mode", mode, NULL };
  const tpu_sweep_counts n = run_into(tu_path("d"), argv, 1);
  ck_assert_int_eq(n.failed, 1);
  const char *csv = file_text(tu_path("d/results.csv"));
  static const char head[] = "point,status,n,half,word,none,error\n0,failed,,,,,";   /* no axis: one point */
  ck_assert_msg(!strncmp(csv, head, strlen(head)), "%s", csv);
  ck_assert_msg(strstr(csv, why) != NULL, "%s: expected '%s'", csv, why);
}

START_TEST(A_column_the_run_leaves_without_a_value_fails_the_point) {
  point_fails("missing", "fake's run gave no value for the CSV column 'half' (null if it has none)");
}
END_TEST

START_TEST(A_value_of_another_type_or_an_undeclared_column_fails_the_point) {
  point_fails("wrong", "fake's CSV column 'word' holds a string; the run gave an integer");
  point_fails("undeclared", "fake's CSV column 'extra' is not one of its columns");
  point_fails("fail", "it failed, as asked");
  point_fails("silent", "fake's run gave no report");
}
END_TEST

/* Point 0's journal entry replaced by 'line'; the sweep's resume and a
** merge of the directory both refuse it with 'why' at line 2. */
static void journal_refused(const char *line, const char *why) {
  tu_scratch("sweep");
  static const char *argv[] = { "fake", "--x", "1,2", NULL };
  run_into(tu_path("d"), argv, 1);
  FILE *f = fopen(tu_path("d/points.jsonl"), "a");
  fprintf(f, "%s\n", line);
  fclose(f);
  tpu_sweep_def d;
  tpu_sweep_counts n;
  def_of(&d, argv);
  ck_assert_int_eq(tpu_sweep_run(&d, tu_path("d"), 1, NULL, &n, err, sizeof err), TPU_ERR_INPUT);
  ck_assert_msg(strstr(err, "d/points.jsonl:3: not a journal entry of this sweep (") && strstr(err, why), "%s", err);
  tpu_sweep_def_free(&d);
  char *const dirs[] = { (char *)tu_path("d") };
  long points;
  ck_assert_int_eq(tpu_sweep_merge(&ENV, tu_path("m"), dirs, 1, &points, err, sizeof err), TPU_ERR_INPUT);
  ck_assert_msg(strstr(err, "d/points.jsonl:3: not a journal entry of this sweep (") && strstr(err, why), "%s", err);
}

START_TEST(A_journal_entry_not_as_the_sweep_writes_them_is_refused_at_its_line) {
  journal_refused("{\"point\":0,\"axes\":{\"x\":\"1\"},\"status\":\"ok\"}", "field 'report'");
  journal_refused("{\"point\":0,\"axes\":{\"x\":\"1\"},\"status\":\"ok\",\"report\":null,\"row\":{}}",
                  "field 'report'");
  journal_refused("{\"point\":0,\"axes\":{\"x\":\"1\"},\"status\":\"maybe\",\"report\":{}}", "field 'status'");
  journal_refused("{\"point\":0,\"axes\":{\"x\":\"1\"},\"status\":\"failed\",\"exit\":1}", "field 'error'");
  journal_refused("{\"point\":0,\"status\":\"ok\",\"report\":{},\"row\":{}}", "field 'axes'");
}
END_TEST

/* Rewrites journal 'path' without the text from the first 'what' after
** the first 'after' through the next 'end' character. */
static void journal_cut(const char *path, const char *after, const char *what, char end) {
  char journal[8192];
  snprintf(journal, sizeof journal, "%s", file_text(path));
  char *from = strstr(journal, after) ? strstr(strstr(journal, after), what) : NULL;
  ck_assert_msg(from != NULL, "no %s after %s in %s", what, after, journal);
  const char *to = strchr(from, end) + 1;
  memmove(from, to, strlen(to) + 1);
  FILE *f = fopen(path, "w");
  fputs(journal, f);
  fclose(f);
}

START_TEST(A_journal_row_missing_a_column_is_refused_not_written_empty) {
  tu_scratch("sweep");
  static const char *argv[] = { "fake", "--x", "1,2", NULL };
  run_into(tu_path("d"), argv, 1);
  journal_cut(tu_path("d/points.jsonl"), "\"point\":1", "\"half\":", ',');   /* point 1's row loses "half" */
  tpu_sweep_def d;
  tpu_sweep_counts n;
  def_of(&d, argv);
  ck_assert_int_eq(tpu_sweep_run(&d, tu_path("d"), 1, NULL, &n, err, sizeof err), TPU_ERR_INPUT);
  ck_assert_msg(strstr(err, "points.jsonl: point 1: column 'half': expected a real or null in its row, got none"),
                "%s", err);
  tpu_sweep_def_free(&d);
}
END_TEST

START_TEST(Journal_entries_without_rows_are_run_again) {
  tu_scratch("sweep");
  static const char *argv[] = { "fake", "--x", "5,6", NULL };
  run_into(tu_path("a"), argv, 1);
  char want[8192];
  snprintf(want, sizeof want, "%s", file_text(tu_path("a/results.csv")));
  /* point 0's entry as a tpusim before rows wrote it: "ok", no row */
  journal_cut(tu_path("a/points.jsonl"), "\"point\":0", ",\"row\":", '}');
  const tpu_sweep_counts n = run_into(tu_path("a"), argv, 1);
  ck_assert_int_eq(n.run, 1);
  ck_assert_str_eq(file_text(tu_path("a/results.csv")), want);
}
END_TEST

START_TEST(Shards_merge_into_the_one_process_csv) {
  tu_scratch("sweep");
  static const char *argv[] = { "fake", "--x", "1,2,3,4,5", "--mode", "full,fail", NULL };
  run_into(tu_path("one"), argv, 2);
  char want[8192];
  snprintf(want, sizeof want, "%s", file_text(tu_path("one/results.csv")));
  char dirs[3][512];
  for (int s = 0; s < 3; s++) {
    tpu_sweep_def d;
    tpu_sweep_counts n;
    def_of(&d, argv);
    d.shard = s + 1;
    d.nshards = 3;
    snprintf(dirs[s], sizeof dirs[s], "%s", tu_path(s == 0 ? "s1" : s == 1 ? "s2" : "s3"));
    ck_assert_msg(tpu_sweep_run(&d, dirs[s], 1, NULL, &n, err, sizeof err) == TPU_OK, "%s", err);
    tpu_sweep_def_free(&d);
  }
  char *const some[] = { dirs[0], dirs[2] }, *const all[] = { dirs[0], dirs[1], dirs[2] };
  long points;
  ck_assert_int_eq(tpu_sweep_merge(&ENV, tu_path("m"), some, 2, &points, err, sizeof err), TPU_ERR_INPUT);
  ck_assert_msg(strstr(err, "the shards hold 7 of the 10 points") != NULL, "%s", err);
  ck_assert_msg(tpu_sweep_merge(&ENV, tu_path("m"), all, 3, &points, err, sizeof err) == TPU_OK, "%s", err);
  ck_assert_int_eq(points, 10);
  ck_assert_str_eq(file_text(tu_path("m/results.csv")), want);
}
END_TEST

START_TEST(The_definition_takes_its_commands_from_the_table) {
  tpu_sweep_def d;
  static const char *bad[] = { "train", "--x", "1", NULL };
  ck_assert_int_eq(tpu_sweep_def_parse(&d, &ENV, 3, (char **)bad, err, sizeof err), TPU_ERR_INPUT);
  ck_assert_str_eq(err, "'train': expected the command to sweep, fake or other");
  tpu_sweep_def_free(&d);
  static const char *ok[] = { "other", "--mode", "full", "--x", "1,2,3", "--set", "k=a,b", NULL };
  def_of(&d, ok);
  ck_assert_int_eq(d.npoints, 6);
  ck_assert_int_eq(d.naxes, 2);
  ck_assert_str_eq(d.axes[1].name, "k");
  char *argv[TPU_SWEEP_MAX_ARGS + 8], bufs[256];
  const int argc = tpu_sweep_point_argv(&d, 5, argv, TPU_SWEEP_MAX_ARGS + 8, bufs, sizeof bufs);
  const char *want[] = { "other", "--threads", "1", "--mode", "full", "--x", "3", "--set", "k=b", "--json" };
  ck_assert_int_eq(argc, 10);
  for (int i = 0; i < argc; i++) ck_assert_str_eq(argv[i], want[i]);
  ck_assert_ptr_null(argv[argc]);
  tpu_sweep_def_free(&d);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sweep");
  TU_CASE(s, "rows", 60, Typed_rows_make_the_csv_the_same_for_every_job_count,
          A_column_the_run_leaves_without_a_value_fails_the_point, Journal_entries_without_rows_are_run_again,
          A_value_of_another_type_or_an_undeclared_column_fails_the_point,
          A_journal_row_missing_a_column_is_refused_not_written_empty,
          A_journal_entry_not_as_the_sweep_writes_them_is_refused_at_its_line);
  TU_CASE(s, "definition", 60, The_definition_takes_its_commands_from_the_table, Shards_merge_into_the_one_process_csv);
  return tu_main(s);
}
