/* The limit of reading a capture through libpcap: a minimal pcap_next_ex loop that touches
 * every packet. scripts/bench compares icy-sniff's time with this loop's on the same file.
 *
 *     pcaploop FILE             libpcap as it comes (stdio's default 4 KiB reads)
 *     pcaploop FILE BYTES       the file read through a stdio buffer of BYTES, as icy-sniff
 *                               reads it (1 MiB): the loop's floor with the same I/O */
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    char err[PCAP_ERRBUF_SIZE];
    if (argc < 2) { fprintf(stderr, "usage: pcaploop FILE [BUFFER-BYTES]\n"); return 2; }
    pcap_t *p;
    char *buffer = NULL;
    if (argc > 2) {
        size_t size = strtoul(argv[2], NULL, 10);
        FILE *f = fopen(argv[1], "rb");
        if (!f) { perror("pcaploop"); return 2; }
        if (posix_memalign((void **)&buffer, 4096, size) != 0) buffer = NULL;   /* page-aligned, as icy-sniff's */
        if (!buffer || setvbuf(f, buffer, _IOFBF, size) != 0) { fprintf(stderr, "pcaploop: setvbuf failed\n"); return 2; }
        p = pcap_fopen_offline(f, err);
    } else {
        p = pcap_open_offline(argv[1], err);
    }
    if (!p) { fprintf(stderr, "pcaploop: %s\n", err); return 2; }
    struct pcap_pkthdr *h;
    const u_char *d;
    unsigned long packets = 0, bytes = 0, sum = 0;
    while (pcap_next_ex(p, &h, &d) == 1) {
        packets++;
        bytes += h->caplen;
        sum += d[h->caplen / 2];   /* touch the data so the loop does real work */
    }
    printf("%lu packets %lu bytes %lu\n", packets, bytes, sum);
    pcap_close(p);
    free(buffer);
    return 0;
}
