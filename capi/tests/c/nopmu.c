/*
 * On a machine without a core PMU, asking for a hardware event fails in
 * pmc_allocate with -1 and an errno, and the library prints nothing (the
 * test runner checks that this program's stdout and stderr stay empty).
 */
#include "check.h"

int
main(void)
{
	pmc_id_t id = PMC_ID_INVALID;

	if (pmc_init() != 0)
		return 40;
	errno = 0;
	int r = pmc_allocate("instructions", PMC_MODE_TC, 0, PMC_CPU_ANY, &id, 0);
	if (r != -1 || errno == 0)
		return 10 + (r == -1);
	if (id != PMC_ID_INVALID)
		return 20;
	/* The message explains it, for programs that want to show it. */
	if (strlen(pmc_last_error()) == 0)
		return 30;
	return 0;
}
