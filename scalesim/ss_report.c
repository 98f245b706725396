/*
** ss_report.c -- SCALE-Sim's report files, as SCALE-Sim v2 writes them:
** COMPUTE_REPORT.csv (cycles, stalls, the three percentages),
** BANDWIDTH_REPORT.csv (SRAM bandwidths, and with the memory model the DRAM
** ones) and DETAILED_ACCESS_REPORT.csv (with the memory model: each
** operand's first and last cycle and words, SRAM then DRAM). Its floats are
** Python's repr, its rows end in a comma; tests/xcheck compares them with
** SCALE-Sim's byte for byte.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "scalesim/scalesim.h"

/* Python's repr of a float (the shortest text that reads back the same),
** as SCALE-Sim writes its percentages. */
static void py_float(tpu_text *t, double x) {
  char buf[40];
  int p = 1;
  for (; p < 17; p++) {
    snprintf(buf, sizeof buf, "%.*e", p - 1, x);
    if (strtod(buf, NULL) == x) break;
  }
  const int e10 = x == 0.0 ? 0 : atoi(strchr(buf, 'e') + 1);
  if (e10 < -4 || e10 >= 16) { tpu_text_printf(t, "%s", buf); return; }
  const int places = p - 1 - e10 > 0 ? p - 1 - e10 : 0;
  snprintf(buf, sizeof buf, "%.*f", places, x);
  tpu_text_printf(t, "%s%s", buf, strchr(buf, '.') ? "" : ".0");
}

/* SCALE-Sim's DRAM columns of BANDWIDTH_REPORT.csv (header when r is
** NULL), before the row's end. */
static void dram_columns(tpu_text *bw, const tpu_ss_result *r) {
  if (!r) {
    tpu_text_printf(bw, " Avg IFMAP DRAM BW, Avg FILTER DRAM BW, Avg OFMAP DRAM BW,");
    return;
  }
  for (int k = 0; k < 3; k++) { tpu_text_printf(bw, " "); py_float(bw, r->mem.dram_bw[k]); tpu_text_printf(bw, ","); }
}

/* SCALE-Sim's DETAILED_ACCESS_REPORT.csv: per operand the first and last
** cycle and the words, SRAM then DRAM (cycles printed as its floats). */
static void detail_report(const tpu_ss_topology *tp, const tpu_ss_result *rows, tpu_text *d) {
  static const char *const what[6] = { "SRAM IFMAP", "SRAM Filter", "SRAM OFMAP", "DRAM IFMAP", "DRAM Filter",
                                       "DRAM OFMAP" };
  tpu_text_printf(d, "LayerID,");
  for (int k = 0; k < 6; k++)
    tpu_text_printf(d, " %s Start Cycle, %s Stop Cycle, %s %s,", what[k], what[k], what[k],
                    k % 3 == 2 ? "Writes" : "Reads");
  tpu_text_printf(d, "\n");
  for (int i = 0; i < tp->n; i++) {
    tpu_text_printf(d, "%d,", i);
    for (int k = 0; k < 6; k++) {
      const tpu_ss_access *a = k < 3 ? &rows[i].mem.sram[k] : &rows[i].mem.dram[k - 3];
      tpu_text_printf(d, " %lld.0, %lld.0, %llu,", (long long)a->start, (long long)a->stop,
                      (unsigned long long)a->count);
    }
    tpu_text_printf(d, "\n");
  }
}

static void reports(const tpu_ss_topology *tp, const tpu_ss_result *rows, tpu_text *cr, tpu_text *bw) {
  tpu_text_printf(cr, "LayerID, Total Cycles, Stall Cycles, Overall Util %%, Mapping Efficiency %%, "
                  "Compute Util %%,\n");
  tpu_text_printf(bw, "LayerID, Avg IFMAP SRAM BW, Avg FILTER SRAM BW, Avg OFMAP SRAM BW,");
  if (tp->n && rows[0].has_mem) dram_columns(bw, NULL);
  tpu_text_printf(bw, "\n");
  for (int i = 0; i < tp->n; i++) {
    const tpu_ss_result *r = &rows[i];
    const double c = (double)r->cycles;
    tpu_text_printf(cr, "%d, %llu, %llu, ", i, (unsigned long long)r->cycles,
                    (unsigned long long)(r->has_mem ? r->mem.stall_cycles : r->stall));
    const double pct[3] = { r->s.overall_util_pct, r->s.mapping_eff_pct, r->s.compute_util_pct };
    for (int k = 0; k < 3; k++) { py_float(cr, pct[k]); tpu_text_printf(cr, ", "); }
    cr->n -= 1;                                       /* SCALE-Sim ends a row with "," */
    tpu_text_printf(cr, "\n");
    tpu_text_printf(bw, "%d, ", i);
    const double b[3] = { (double)r->s.ifmap_sram_reads / c, (double)r->s.filter_sram_reads / c,
                          (double)r->s.ofmap_sram_writes / c };
    for (int k = 0; k < 3; k++) { py_float(bw, b[k]); tpu_text_printf(bw, ", "); }
    bw->n -= 2;
    tpu_text_printf(bw, ",");
    if (r->has_mem) dram_columns(bw, r);
    tpu_text_printf(bw, "\n");
  }
}

tpu_status tpu_ss_write_reports(const char *logdir, const char *run_dir, const tpu_ss_topology *tp,
                                const tpu_ss_result *rows, char *err, size_t errcap) {
  char dir[4096], path[4200];
  snprintf(dir, sizeof dir, "%s/%s", logdir, run_dir);
  if (mkdir(logdir, 0777) != 0 && errno != EEXIST) {
    snprintf(err, errcap, "%s: cannot create: %s", logdir, strerror(errno));
    return TPU_ERR_IO;
  }
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    snprintf(err, errcap, "%s: cannot create: %s", dir, strerror(errno));
    return TPU_ERR_IO;
  }
  tpu_text cr = { 0 }, bw = { 0 }, da = { 0 };
  reports(tp, rows, &cr, &bw);
  const int nfiles = tp->n && rows[0].has_mem ? 3 : 2;
  if (nfiles == 3) detail_report(tp, rows, &da);
  tpu_status st = TPU_OK;
  if (cr.oom || bw.oom || da.oom) {
    snprintf(err, errcap, "out of memory");
    st = TPU_ERR_NOMEM;
  }
  const tpu_text *t[3] = { &cr, &bw, &da };
  const char *names[3] = { "COMPUTE_REPORT.csv", "BANDWIDTH_REPORT.csv", "DETAILED_ACCESS_REPORT.csv" };
  for (int k = 0; k < nfiles && !st; k++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[k]);
    if (tpu_write_atomic(path, t[k]->s, t[k]->n)) {
      snprintf(err, errcap, "%s: cannot write: %s", path, strerror(errno));
      st = TPU_ERR_IO;
    }
  }
  tpu_free(cr.s);
  tpu_free(bw.s);
  tpu_free(da.s);
  return st;
}
