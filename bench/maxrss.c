/* Runs a command and writes its peak resident set size to a file:
 *
 *     maxrss OUT-FILE COMMAND [ARG...]
 *
 * scripts/bench runs everything through it because a process started straight from Python
 * inherits the interpreter's memory until it execs, and its peak then never reads below ~14 MiB.
 * This helper is small, so what it reports is the command's own peak (KiB, from wait4). Exit status:
 * the command's (or 127 when it cannot be started). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: maxrss OUT-FILE COMMAND [ARG...]\n"); return 2; }
    pid_t pid = fork();
    if (pid < 0) { perror("maxrss: fork"); return 127; }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror("maxrss: exec");
        _exit(127);
    }
    int status = 0;
    struct rusage usage;
    if (wait4(pid, &status, 0, &usage) < 0) { perror("maxrss: wait4"); return 127; }
    FILE *out = fopen(argv[1], "w");
    if (out) { fprintf(out, "%ld\n", usage.ru_maxrss); fclose(out); }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
