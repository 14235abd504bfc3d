/*
 * Thread safety: threads allocating, counting and releasing their own PMCs
 * at once, and one using ids that do not exist, all get correct results.
 */
#include <pthread.h>

#include "check.h"

#define THREADS	4
#define ROUNDS	200

static void *
worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		pmc_id_t id;
		pmc_value_t v;
		OK(pmc_allocate("task-clock", PMC_MODE_TC, 0, PMC_CPU_ANY, &id, 0));
		OK(pmc_start(id));
		spin_ms(0);
		OK(pmc_stop(id));
		OK(pmc_read(id, &v));
		CHECK(v > 0, "round %d: %llu", i, (unsigned long long)v);
		OK(pmc_release(id));
		FAILS_WITH(pmc_read(id, &v), EINVAL);
	}
	return NULL;
}

static void *
intruder(void *arg)
{
	(void)arg;
	for (uint32_t i = 0; i < ROUNDS * 10; i++) {
		pmc_value_t v;
		/* ids far beyond any allocated one */
		FAILS_WITH(pmc_read(0x40000000u + i, &v), EINVAL);
		FAILS_WITH(pmc_release(0x40000000u + i), EINVAL);
	}
	return NULL;
}

int
main(void)
{
	pthread_t t[THREADS + 1];

	OK(pmc_init());
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, worker, NULL) == 0, "%s", "pthread_create");
	CHECK(pthread_create(&t[THREADS], NULL, intruder, NULL) == 0, "%s", "pthread_create");
	for (int i = 0; i <= THREADS; i++)
		pthread_join(t[i], NULL);
	printf("%d threads x %d allocate/start/stop/read/release\n", THREADS, ROUNDS);
	return 0;
}
