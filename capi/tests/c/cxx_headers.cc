// <pmc.h> and <pmclog.h> in a C++ program (g++ -Wall -Wextra -Werror):
// the declarations link with C linkage, the enums and X-macro lists
// expand, FreeBSD's parser types are complete types. Prints one line.
#include <pmc.h>
#include <pmclog.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

static int failures;

static void
expect(bool ok, const std::string &what)
{
	if (!ok) {
		std::fprintf(stderr, "failed: %s [errno %d; %s]\n", what.c_str(),
		    errno, pmc_last_error());
		failures++;
	}
}

int
main()
{
	// The lists as C++ containers, each name checked with the library.
	std::vector<std::string> cpus;
#undef __PMC_CPU
#define __PMC_CPU(S, V, D)	cpus.push_back(#S);
	__PMC_CPUS()
	expect(cpus.size() == 44, "44 CPUs in __PMC_CPUS()");
#undef __PMC_CLASS
#define __PMC_CLASS(S, V, D)	\
	expect(std::string(pmc_name_of_class(PMC_CLASS_##S)) == #S, #S);
	__PMC_CLASSES()
	errno = 0;
	expect(pmc_name_of_class(static_cast<enum pmc_class>(1)) == nullptr &&
	    errno == EINVAL, "class 1 (K7) is EINVAL");

	// Enumerators in constant expressions.
	static_assert(PMC_CLASS_CMN600_PMU == 0x18, "PMC_CLASS_CMN600_PMU");
	static_assert(PMC_CPU_INTEL_ALDERLAKEN == 0xA1, "PMC_CPU_INTEL_ALDERLAKEN");
	static_assert(PMC_EV_CMN600_PMU_dn_rxreq_dvmop == 0x14600, "CMN600 block");
	static_assert(PMC_ID_TO_CLASS(PMC_ID_MAKE_ID(1, PMC_MODE_TC,
	    PMC_CLASS_ARMV8, 2)) == PMC_CLASS_ARMV8, "PMC_ID_* in C++");

	// Every event's name, through the generated list.
	int events = 0;
#undef __PMC_EV_BLOCK
#undef __PMC_EV
#define __PMC_EV_BLOCK(C, V)
#define __PMC_EV(C, N)	\
	expect(std::strcmp(pmc_name_of_event(PMC_EV_##C##_##N), #N) == 0, #N); \
	events++;
	__PMC_EVENTS()
	expect(events == 1997, "1997 events");

	// FreeBSD's parser types are complete; the parser runs from C++.
	union pmclog_entry entry;
	std::memset(&entry, 0, sizeof(entry));
	struct pmclog_parse_state ps;
	std::memset(&ps, 0, sizeof(ps));
	ps.ps_state = PL_STATE_NEW_RECORD;
	expect(sizeof(ps.ps_saved) >= sizeof(struct pmclog_callchain),
	    "ps_saved holds a CALLCHAIN");
	void *parser = pmclog_open(PMCLOG_FD_NONE);
	expect(parser != nullptr, "pmclog_open(PMCLOG_FD_NONE)");
	struct pmclog_ev ev;
	std::memset(&ev, 0, sizeof(ev));
	expect(pmclog_read(parser, &ev) < 0 && ev.pl_state == PMCLOG_REQUIRE_DATA,
	    "an empty parser requires data");
	pmclog_close(parser);

	if (failures != 0)
		return 1;
	std::printf("c++ ok\n");
	return 0;
}
