import ArgumentParser
import IcySniffCore
#if canImport(Glibc)
import Glibc
#endif

@main
struct IcySniff: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "icy-sniff",
        abstract: "Passive HTTP/1.x traffic analyzer: captures → transactions, timings, cache freshness, HAR.",
        discussion: """
        Reads packets from capture files (pcap, pcapng, gzip-compressed too, or '-' for standard
        input) or a live interface, reassembles TCP, parses HTTP/1.x, pairs requests with responses
        and writes them as HAR 1.2 or as tabular logs.

        EXAMPLES
          icy-sniff -r phone.pcap --har -o phone.har
          icy-sniff -r capture.pcapng.gz                  (a table on a terminal, TSV in a pipe)
          icy-sniff -r capture.pcap --format ndjson | jq .
          icy-sniff -r capture.pcap --connections
          icy-sniff -i wlan0 -f 'tcp port 80'

        EXIT CODES
          0   success; a damaged capture (truncated, corrupt) or an empty file is a warning on
              standard error and in the output, and everything readable is analysed and written
          1   with --strict: a capture was damaged
          2   an input could not be used: missing file, no permission, not a capture, unsupported
              link type, invalid filter, no such interface, no capture permission
          3   the output could not be written
          64  the command line is wrong
        """,
        version: IcySniffVersion.current,
        subcommands: [Analyze.self],
        defaultSubcommand: Analyze.self
    )
}
