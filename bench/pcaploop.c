/* The limit of reading a capture through libpcap: a minimal pcap_next_ex loop that touches
 * every packet. scripts/bench compares icy-sniff's time with this loop's on the same file. */
#include <pcap/pcap.h>
#include <stdio.h>

int main(int argc, char **argv) {
    char err[PCAP_ERRBUF_SIZE];
    if (argc < 2) { fprintf(stderr, "usage: pcaploop FILE\n"); return 2; }
    pcap_t *p = pcap_open_offline(argv[1], err);
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
    return 0;
}
