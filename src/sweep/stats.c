/* Statistics of a condition over its seeds, and the compute-budget table against a plan. */
#include "labbox/check.h"
#include "labbox/sweep.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>

/* The continued fraction of the regularized incomplete beta function (modified Lentz), good
 * for x < (a + 1) / (a + b + 2); the caller uses the symmetry for the rest. */
static double beta_cf(double a, double b, double x)
{
	const double tiny = 1e-300, eps = 1e-15;
	double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
	if (fabs(d) < tiny)
		d = tiny;
	d = 1.0 / d;
	double h = d;
	for (int m = 1; m <= 300; m++) {
		double m2 = 2.0 * m;
		double aa = m * (b - m) * x / ((a - 1.0 + m2) * (a + m2));
		d = 1.0 + aa * d;
		if (fabs(d) < tiny)
			d = tiny;
		c = 1.0 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		d = 1.0 / d;
		h *= d * c;
		aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1.0 + m2));
		d = 1.0 + aa * d;
		if (fabs(d) < tiny)
			d = tiny;
		c = 1.0 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		d = 1.0 / d;
		double del = d * c;
		h *= del;
		if (fabs(del - 1.0) < eps)
			break;
	}
	return h;
}

static double beta_inc(double a, double b, double x)
{
	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
	if (x < (a + 1.0) / (a + b + 2.0))
		return exp(lbt) * beta_cf(a, b, x) / a;
	return 1.0 - exp(lbt) * beta_cf(b, a, 1.0 - x) / b;
}

/* P(T <= t) for Student's t with df degrees of freedom, t >= 0. */
static double t_cdf(double t, double df)
{
	return 1.0 - 0.5 * beta_inc(df / 2.0, 0.5, df / (df + t * t));
}

double lb_sweep_t975(unsigned df)
{
	if (df == 0)
		return NAN;
	/* Bisection: the CDF is monotonic, and t(0.975, 1) = 12.706 is the largest. */
	double lo = 0, hi = 64;
	for (int i = 0; i < 200 && hi - lo > 1e-13; i++) {
		double mid = (lo + hi) / 2;
		if (t_cdf(mid, df) < 0.975)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

int lb_sweep_stats_compute(const double *v, size_t n, lb_sweep_stats *out)
{
	if (n == 0)
		return -EINVAL;
	double mn = v[0], mx = v[0];
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(v[i]))
			return -EINVAL;
		mn = v[i] < mn ? v[i] : mn;
		mx = v[i] > mx ? v[i] : mx;
	}
	/* The sums are taken of the values scaled by a power of two that brings the largest
	 * below 1: finite values near the double maximum (1.7e308 twice) would otherwise sum to
	 * inf, and their mean, which always lies between min and max, come out inf or NaN.
	 * Scaling by 2^-e is exact and every rounding scales with it, so values of ordinary
	 * size give the very doubles the unscaled sums gave. */
	int e = 0;
	double big = fmax(fabs(mn), fabs(mx));
	if (big > 0)
		frexp(big, &e);
	/* Two passes: the mean first, then squared deviations from it, which loses less than
	 * sum-of-squares formulas when the values are large and close. */
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += ldexp(v[i], -e);
	double mean_s = sum / (double)n;
	out->n = n;
	out->mean = ldexp(mean_s, e);
	out->min = mn;
	out->max = mx;
	out->has_spread = false;
	out->std = out->ci_low = out->ci_high = NAN;
	if (n >= 2) {
		double ss = 0;
		for (size_t i = 0; i < n; i++) {
			double d = ldexp(v[i], -e) - mean_s;
			ss += d * d;
		}
		double std_s = sqrt(ss / (double)(n - 1));
		double half_s = lb_sweep_t975((unsigned)(n - 1)) * std_s / sqrt((double)n);
		out->std = ldexp(std_s, e);
		out->ci_low = ldexp(mean_s - half_s, e);
		out->ci_high = ldexp(mean_s + half_s, e);
		/* A spread wider than the doubles reach (values of both signs near the maximum)
		 * is none that can be written: no std and no interval, as for n = 1, rather than
		 * inf that JSON cannot hold. */
		out->has_spread = isfinite(out->std) && isfinite(out->ci_low) &&
				  isfinite(out->ci_high);
		if (!out->has_spread)
			out->std = out->ci_low = out->ci_high = NAN;
	}
	return 0;
}

int lb_sweep_budget_check(size_t conditions, size_t seeds, long iterations, double sweep_budget,
			  double cell_budget, char *err, size_t errlen)
{
	double budget = sweep_budget > 0 ? sweep_budget : cell_budget;
	if (budget <= 0)
		return 0;
	const lb_check_budget_row *row = lb_check_budget_row_for(budget);
	/* A per-cell budget pays for one condition and one seed: only the iterations of that
	 * condition are the table's business. */
	const char *which = sweep_budget > 0 ? "sweep budget" : "per-cell budget";
	char what[160] = "";
	if (sweep_budget > 0 && (long)conditions > row->conditions)
		snprintf(what, sizeof what, "%zu conditions (at most %ld)", conditions,
			 row->conditions);
	else if (sweep_budget > 0 && (long)seeds > row->seeds)
		snprintf(what, sizeof what, "%zu seeds (at most %ld)", seeds, row->seeds);
	else if (row->iterations && iterations > row->iterations)
		snprintf(what, sizeof what, "%ld iterations per condition (at most %ld)", iterations,
			 row->iterations);
	if (!what[0])
		return 0;
	snprintf(err, errlen,
		 "the plan (%zu conditions x %zu seeds x %ld iterations) is outside the seed's "
		 "compute-budget table for a %gs %s: %s; the table's row (Budget | Max Conditions | "
		 "Max Seeds | Max Iterations/Condition) is %s; shrink the grid, raise the budget, or "
		 "pass --ignore-budget-table",
		 conditions, seeds, iterations, budget, which, what, row->text);
	return -E2BIG;
}
