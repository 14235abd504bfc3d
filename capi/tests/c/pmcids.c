/*
 * Every pmcid the library returns decodes, with FreeBSD's own macros, to
 * the PMC's CPU, mode, class and a row index of its own. The macros are
 * transcribed from sys/sys/pmc.h of the tree whose PMC_VERSION is
 * 0x0A000000 (PMC_ID_TO_ROWINDEX, PMC_ID_TO_CLASS, PMC_ID_TO_MODE,
 * PMC_ID_TO_CPU: "CPU is 12 bits, MODE 4, CLASS 8, and ROW INDEX 8"); a
 * process PMC's CPU field is PMC_CPU_ANY (~0) cut to its 12 bits, as
 * hwpmc_mod.c's PMC_ID_MAKE_ID(cpu, ...) makes it.
 *
 * Then every name pmc_event_names_of_class() lists for this machine's
 * classes allocates, or fails for want of the event, never with EINVAL.
 *
 * Prints one line per PMC allocated: "<spec> <mode>". System-wide modes
 * need CPU 0 to be open to this user; where they are not, only the
 * process modes are printed.
 */
#include "check.h"

#define FBSD_PMC_ID_TO_ROWINDEX(ID)	((ID) & 0xFF)
#define FBSD_PMC_ID_TO_CLASS(ID)	(((ID) & 0xFF00) >> 8)
#define FBSD_PMC_ID_TO_MODE(ID)		(((ID) & 0xF0000) >> 16)
#define FBSD_PMC_ID_TO_CPU(ID)		(((ID) & 0xFFF00000) >> 20)

#define MAXPMCS	64

static pmc_id_t ids[MAXPMCS];
static int nids;

/*
 * The class pmc_pmcinfo() reports for this process's rows named `spec`
 * (its PMCs come first, up to the first FREE row); -1 if none, -2 if
 * they differ.
 */
static int
class_of(const char *spec)
{
	struct pmc_pmcinfo *pi;
	int cl = -1;

	OK(pmc_pmcinfo(0, &pi));
	for (int n = 0; pi->pm_pmcs[n].pm_ownerpid != -1; n++)
		if (strcmp(pi->pm_pmcs[n].pm_name, spec) == 0) {
			int c = (int)pi->pm_pmcs[n].pm_class;
			cl = cl == -1 || cl == c ? c : -2;
		}
	free(pi);
	return cl;
}

static void
try(const char *spec, enum pmc_mode mode, int required)
{
	int cpu = PMC_IS_SYSTEM_MODE(mode) ? 0 : PMC_CPU_ANY;
	pmc_id_t id;

	if (pmc_allocate(spec, mode, 0, cpu, &id, 65536) != 0) {
		CHECK(!required, "pmc_allocate(%s, %s)", spec,
		    pmc_name_of_mode(mode));
		return;
	}
	CHECK(nids < MAXPMCS, "%s", "too many PMCs");
	unsigned want_cpu = PMC_IS_SYSTEM_MODE(mode) ? 0u : 0xFFFu;
	CHECK(FBSD_PMC_ID_TO_CPU(id) == want_cpu, "%s: cpu of %#x", spec, id);
	CHECK(FBSD_PMC_ID_TO_MODE(id) == (unsigned)mode, "%s: mode of %#x", spec, id);
	int cl = class_of(spec);
	CHECK(cl >= 0 && FBSD_PMC_ID_TO_CLASS(id) == (unsigned)cl,
	    "%s: class of %#x, pmc_pmcinfo says %d", spec, id, cl);
	/* Ours decode the same; pmc_width finds the class the id names. */
	CHECK(PMC_ID_TO_CPU(id) == FBSD_PMC_ID_TO_CPU(id) &&
	    PMC_ID_TO_MODE(id) == FBSD_PMC_ID_TO_MODE(id) &&
	    PMC_ID_TO_CLASS(id) == FBSD_PMC_ID_TO_CLASS(id) &&
	    PMC_ID_TO_ROWINDEX(id) == FBSD_PMC_ID_TO_ROWINDEX(id), "%#x", id);
	/* No other live PMC has the same CPU, mode, class and row. */
	for (int i = 0; i < nids; i++)
		CHECK(ids[i] != id, "%s: %#x handed out twice", spec, id);
	ids[nids++] = id;
	printf("%s %s\n", spec, pmc_name_of_mode(mode));
}

int
main(int argc, char **argv)
{
	OK(pmc_init());
	/* Twice each: the second of a kind has another row. */
	for (int k = 0; k < 2; k++) {
		try("task-clock", PMC_MODE_TC, 1);
		try("task-clock", PMC_MODE_TS, 1);
		try("task-clock", PMC_MODE_SC, 0);
		try("task-clock", PMC_MODE_SS, 0);
		for (int i = 1; i < argc; i++) {
			try(argv[i], PMC_MODE_TC, 0);
			try(argv[i], PMC_MODE_SC, 0);
		}
	}
	/*
	 * More PMCs of one kind than there are row indexes, one at a time:
	 * released rows are handed out again, never a live PMC's.
	 */
	OK(pmc_release(ids[0]));
	for (int i = 0; i < 300; i++) {
		pmc_id_t again;

		OK(pmc_allocate("task-clock", PMC_MODE_TC, 0, PMC_CPU_ANY, &again, 0));
		for (int j = 1; j < nids; j++)
			CHECK(again != ids[j], "%#x is live", again);
		OK(pmc_release(again));
	}
	for (int i = 1; i < nids; i++)
		OK(pmc_release(ids[i]));

	/*
	 * pmc_event_names_of_class: every name listed for a class this
	 * machine has allocates, or fails for want of the event here, never
	 * with EINVAL (a name pmc_allocate does not take).
	 */
	const struct pmc_cpuinfo *ci;
	OK(pmc_cpuinfo(&ci));
	int listed = 0, counted = 0;
	for (unsigned c = 0; c < ci->pm_nclass; c++) {
		const char **names;
		int nnames;

		if (pmc_event_names_of_class(ci->pm_classes[c].pm_class, &names,
		    &nnames) != 0)
			continue;
		for (int i = 0; i < nnames; i++) {
			pmc_id_t id;

			listed++;
			errno = 0;
			if (pmc_allocate(names[i], PMC_MODE_TC, 0, PMC_CPU_ANY, &id,
			    0) == 0) {
				counted++;
				CHECK(FBSD_PMC_ID_TO_CLASS(id) ==
				    (unsigned)ci->pm_classes[c].pm_class ||
				    ci->pm_classes[c].pm_class == PMC_CLASS_TSC,
				    "%s: class of %#x", names[i], id);
				OK(pmc_release(id));
			} else
				CHECK(errno != EINVAL, "%s listed for %s is not taken",
				    names[i],
				    pmc_name_of_class(ci->pm_classes[c].pm_class));
		}
		free(names);
	}
	CHECK(counted > 0, "%d of %d listed names allocate", counted, listed);
	printf("%d of %d listed names allocate\n", counted, listed);
	printf("pmcids ok\n");
	return 0;
}
