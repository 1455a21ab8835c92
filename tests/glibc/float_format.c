/* glibc's own floating-point formatting and parsing: printf's %f, %g, %e
 * (and %a) of doubles chosen for their awkward cases, under each rounding
 * mode (glibc's printf rounds as the current mode says), and strtod of
 * strings that test its rounding, its range errors and where it stops.
 * Nothing is checked here: the boot test compares every byte with what
 * the same binary prints on the build host. */
#include <errno.h>
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp_work.h"

static const double values[] = {
    0.0, -0.0, 1.0, -1.5, 0.1, 1.0 / 3.0, 2.0 / 3.0, 0.125, 0.375, 2.5, 1e-5, 123456.789, 1e15 + 0.3, 9.999999e-5,
    6.02214076e23, 1.7976931348623157e308, 2.2250738585072014e-308, 4.9406564584124654e-324, 1e22, 1e23,
    INFINITY, -INFINITY, NAN,
};

static const char *const formats[] = {"%f", "%.0f", "%.3f", "%g", "%.3g", "%#.3g", "%.17g", "%e", "%.2e", "%+12.4e", "%a"};

static void print_values(void) {
  for (size_t f = 0; f < sizeof formats / sizeof *formats; ++f) {
    printf("%-8s", formats[f]);
    for (size_t v = 0; v < sizeof values / sizeof *values; ++v) {
      char buf[400];
      /* The formats are the table's own, so a non-literal format is safe. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
      snprintf(buf, sizeof buf, formats[f], values[v]);
#pragma GCC diagnostic pop
      printf(" %s", buf);
    }
    printf("\n");
  }
}

/* Ties and near-ties, where the rounding mode decides the last digit. */
static void print_rounding(void) {
  for (int m = 0; m < 4; ++m) {
    fesetround(fp_modes[m]);
    char buf[200];
    snprintf(buf, sizeof buf, "%.2f %.2f %.0f %.0f %.1e %.3g %.1f", 0.125, -0.125, 2.5, -3.5, 1.25e10, 2.0 / 3.0, 0.05);
    /* strtod rounds as the mode says too. */
    const double tenth = strtod("0.1", NULL), minus_third = strtod("-0.333333333333333333333", NULL);
    fesetround(FE_TONEAREST);
    printf("%-12s %s, strtod %a %a\n", fp_mode_name(fp_modes[m]), buf, tenth, minus_third);
  }
}

static const char *const inputs[] = {
    "0", "-0", "1e-320", "2.2250738585072011e-308", "0.1", "3.14159265358979323846264338327950288", "1e400", "-1e400",
    "1e-400", "0x1.8p3", "0x1p-1074", "inf", "-Infinity", "nan", "  -12.5e2xyz", "1.7976931348623158e308",
    "9007199254740993", "0.30000000000000004", "123abc", ".e5", "4.9e-324", "2.4703282292062328e-324",
};

static void print_parses(void) {
  for (size_t i = 0; i < sizeof inputs / sizeof *inputs; ++i) {
    char *end;
    errno = 0;
    const double d = strtod(inputs[i], &end);
    const int err = errno;
    unsigned long long bits;
    memcpy(&bits, &d, sizeof bits);
    printf("strtod(\"%s\") = %.17g bits %016llx, %zu chars used%s\n", inputs[i], d, bits, (size_t)(end - inputs[i]),
           err == ERANGE ? ", ERANGE" : err ? ", another error" : "");
  }
}

int main(void) {
  print_values();
  print_rounding();
  print_parses();
  /* A long double too: its own conversion path (x87 extended). */
  printf("%.25Lf %Le %La\n", 1.0L / 3.0L, 2.0L / 3.0L, 1.0L / 10.0L);
  printf("float_format: done\n");
  return 0;
}
