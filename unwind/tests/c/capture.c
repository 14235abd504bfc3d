/* Captures its own registers and the top of its stack, as perf's
 * PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER would at a sample, three
 * calls deep in functions built without frame pointers, and writes them
 * with its /proc/self/maps: the unwinder's tests replay the capture.
 * Output (argv[1]): pc, sp, fp as little-endian u64s, then the stack bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char copy[8192];
static uint64_t regs[3];
static size_t copied;

static uint64_t stack_end(uint64_t sp) {
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    uint64_t lo, hi, end = sp;
    while (maps && fgets(line, sizeof line, maps))
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= sp && sp < hi)
            end = hi;
    if (maps)
        fclose(maps);
    return end;
}

__attribute__((noinline)) static int capture(int depth) {
    uint64_t pc, sp, fp;
    __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
                     : "=r"(pc), "=r"(sp), "=r"(fp));
    /* Calls from here on only write below sp. */
    uint64_t end = stack_end(sp);
    copied = end - sp < sizeof copy ? end - sp : sizeof copy;
    memcpy(copy, (void *)sp, copied);
    regs[0] = pc;
    regs[1] = sp;
    regs[2] = fp;
    return depth + (int)(copied & 1);
}

/* -DFAR_LEVEL2 puts level2 in a section of its own, which the test links
 * far from .text: a second executable segment, with its own load bias. */
#ifdef FAR_LEVEL2
#define LEVEL2_PLACE __attribute__((section("far_text")))
#else
#define LEVEL2_PLACE
#endif

__attribute__((noinline)) int level3(int x) { return capture(x + 1) * 3 + 1; }
__attribute__((noinline)) LEVEL2_PLACE int level2(int x) { return level3(x + 1) * 5 + 2; }
__attribute__((noinline)) int level1(int x) { return level2(x + 1) * 7 + 3; }

int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    int r = level1(argc);
    FILE *out = fopen(argv[1], "wb");
    if (!out || fwrite(regs, sizeof regs, 1, out) != 1 || fwrite(copy, 1, copied, out) != copied)
        return 1;
    fclose(out);
    FILE *in = fopen("/proc/self/maps", "r"), *maps = fopen(argv[2], "w");
    int c;
    while (in && maps && (c = fgetc(in)) != EOF)
        fputc(c, maps);
    if (maps)
        fclose(maps);
    return r == 0 ? 3 : 0;
}
