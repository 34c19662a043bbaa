import ArgumentParser
import IcySniffCore
#if canImport(Glibc)
import Glibc
#endif

extension OutputFormat: ExpressibleByArgument {}
extension PcapSource.FileReader: ExpressibleByArgument {}

/// The names of the system's users (the password database, NSS included), for completing -Z.
/// Asked of the binary by the shell scripts rather than written into them as a command: a
/// command with a colon (`cut -d:`) breaks zsh's `_arguments` specification.
@Sendable func userNames() -> [String] {
    var names: [String] = []
    setpwent()
    while let entry = getpwent() { names.append(String(cString: entry.pointee.pw_name)) }
    endpwent()
    return names
}

struct Analyze: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "analyze",
        abstract: "Passive HTTP/1.x, HTTP/2 and HTTP/3 traffic analyzer, HTTPS and QUIC too: requests, responses, timings, cache freshness, TLS, HAR.",
        discussion: """
        Reads capture files (pcap, pcapng; gzip, zstd, lz4, xz or bzip2 compressed too; '-' is standard \
        input) or a live interface, reassembles TCP and QUIC, parses HTTP/1.x, HTTP/2 and HTTP/3 (inside TLS \
        and QUIC with a key log, inside proxy tunnels), pairs requests with responses and \
        writes them as HAR 1.2 or as tabular logs (table, TSV, CSV, NDJSON).

        EXAMPLES
          icy-sniff -r phone.pcap --har -o phone.har
          icy-sniff -r capture.pcapng.gz         table on a terminal, TSV in a pipe
          icy-sniff -r capture.pcap --format ndjson | jq .
          icy-sniff -r capture.pcap --connections
          icy-sniff -r phone.pcap --keylog sslkeys.log --har    decrypt TLS and QUIC
          icy-sniff -i wlan0 -f 'tcp port 80'
          icy-sniff -i wlan0 --format ndjson -G 3600 -o 'http-%Y%m%d-%H.ndjson' --stats 60

        EXIT CODES
          0   success. A damaged capture (truncated, corrupt) or an empty file is a
              warning: everything readable is analysed and written.
          1   with --strict: a capture was damaged
          2   an input could not be used: missing file, no permission, not a
              capture, unsupported link type, invalid filter, no such interface,
              no permission to capture
          3   the output could not be written (with -G/-C: a file that could not be
              written is said when it happens, the capture goes on, and the exit
              code is 3 at the end), or --serve could not listen on its port
          64  the command line is wrong
          130 reading files was stopped by SIGINT/SIGTERM: what was read is written
              and says so (a live capture stopped that way exits 0). In a batch,
              no capture starts after the signal, and an interrupted capture's own
              file (--out-dir) is not written, so the next run analyses it again.
        A closed output pipe (icy-sniff … | head) ends the run at once, quietly, with 0.
        """
    )

    @OptionGroup(title: "Input") var input: InputOptions
    @OptionGroup(title: "Output") var output: OutputOptions
    @OptionGroup(title: "Filters") var filters: FilterOptions

    func validate() throws {
        if output.listAnomalies || input.listInterfaces { return }
        // No input is said in `run`: swift-argument-parser names an unknown option only after
        // `validate` passes, and `icy-sniff --bogus` said "give a capture" instead.
        if !input.read.isEmpty && input.interface != nil {
            throw ValidationError("-r and -i cannot be used together")
        }
        if output.batch.outDir != nil && input.interface != nil { throw ValidationError("--out-dir applies to captures read with -r") }
        if let jobs = output.batch.jobs, jobs < 1 { throw ValidationError("-j needs at least 1") }
        if let n = input.maxConnections, n < 16 { throw ValidationError("--max-connections needs at least 16") }
        if output.batch.outDir != nil && output.outputPath != nil { throw ValidationError("use either -o (one output) or --out-dir (one output per capture)") }
        if input.interface == nil && (input.user != nil || input.duration != nil) {
            throw ValidationError("-Z and --duration apply to live capture (-i)")
        }
        if input.filterOption != nil && !input.expression.isEmpty {
            throw ValidationError("give the filter once: -f '\(input.filterOption!)' or as trailing words, not both (trailing: \(input.expression.joined(separator: " ")))")
        }
        // Combinations that would silently write something else than asked.
        if output.har && (output.heads || output.format == .heads) { throw ValidationError("give one output format: --har or -V") }
        if output.webSocketMessages && (output.har || output.heads || (output.format.map { $0 != .websocket } ?? false)) {
            throw ValidationError("--websocket-messages writes one NDJSON row per message: give it without --har, -V or --format")
        }
        if output.webSocketMessages && output.connections {
            throw ValidationError("--connections lists connections; --websocket-messages lists messages: use one of them")
        }
        if output.connections && (output.heads || output.format == .heads) {
            throw ValidationError("--connections lists connections; -V shows transactions' heads: use one of them")
        }
        if output.connections && (output.har || output.format == .har) {
            throw ValidationError("--connections lists connections as a table, TSV, CSV or NDJSON; a HAR has them in log._connections (use --har alone)")
        }
        if output.devices {
            let other = output.connections ? "--connections" : output.heads || output.format == .heads ? "-V" : output.har || output.format == .har ? "--har" : output.webSocketMessages ? "--websocket-messages" : nil
            if let other { throw ValidationError("--devices lists devices as a table, TSV, CSV or NDJSON; \(other) writes something else: use one of them") }
            if try output.serveAddress() != nil { throw ValidationError("--devices lists devices in a file; --serve shows the run in a page: use one of them") }
            if try output.batch.outDir != nil || output.rotation.policy() != nil { throw ValidationError("--devices writes one list at the end of the run: drop --out-dir, -G, -C and -W") }
            if output.fields != nil { throw ValidationError("--devices has its columns (\(DeviceListWriter.columns.joined(separator: ","))): drop --fields") }
        }
        if output.leases != nil && !output.devices { throw ValidationError("--leases names devices: give it with --devices") }
        let named = output.namedFormat ?? output.formatFromPath
        if output.fields != nil && !output.connections, let f = named, f == .ndjson || f == .har || f == .heads || f == .websocket {
            throw ValidationError("--fields chooses the columns of the table, TSV and CSV; \(f == .heads ? "-V shows whole heads" : "NDJSON and HAR carry every field") (drop --fields, or use --format tsv)")
        }
        if output.bodies && named == .heads {
            throw ValidationError("--bodies puts bodies into the HAR (and --out-dir's HARs); -V shows heads only (use --har --bodies)")
        }
        if output.batch.outDir != nil && output.format == .table {
            throw ValidationError("--out-dir writes files: choose --format tsv, csv, ndjson or har (the table is for a terminal)")
        }
        if input.interface == nil && input.bufferKiB != nil { throw ValidationError("-B applies to live capture (-i)") }
        if let b = input.bufferKiB, b < 1 { throw ValidationError("-B needs at least 1 KiB") }
        if let s = input.statsSeconds, !(s > 0) { throw ValidationError("--stats needs a number of seconds above 0") }
        if try output.rotation.policy() != nil {
            if output.outputPath == nil && input.write == nil {
                throw ValidationError("-G, -C and -W rotate files: give -o FILE (the transactions) or -w FILE (the packets)")
            }
            if output.batch.outDir != nil { throw ValidationError("-G, -C and -W rotate one output (-o, -w), not --out-dir's") }
            if output.connections && output.rotation.size != nil { throw ValidationError("-C applies to the transaction outputs and -w; --connections writes its lines whole at the end of each file (use -G)") }
        }
        if try output.serveAddress() != nil {
            if output.batch.outDir != nil { throw ValidationError("--serve shows one run: give the captures with -r (a folder too) and drop --out-dir") }
            if output.connections { throw ValidationError("--serve shows transactions and connections in the page; --connections lists connections in a file: use one of them") }
            if output.listSets { throw ValidationError("--list-sets prints the capture sets and exits: drop --serve") }
        }
        _ = try filters.makeFilter()
        if let fields = output.fields {
            // --connections has columns of its own (docs/OUTPUT.md).
            let known = output.connections ? ConnectionListWriter.columns : Field.allCases.map(\.rawValue)
            for name in Field.parseList(fields) where !known.contains(name) {
                throw ValidationError("unknown field '\(name)'\(output.connections ? " of --connections" : ""); fields: \(known.joined(separator: ","))")
            }
        }
    }

    func run() throws {
        if output.listAnomalies {
            print(AnomalyCatalogue.markdown, terminator: "")
            return
        }
        if input.listInterfaces {
            // tcpdump -D: "1.eth0 [Up, Running]".
            do {
                for (i, interface) in try PcapSource.interfaces().enumerated() {
                    let description = interface.description.map { " (\($0))" } ?? ""
                    print("\(i + 1).\(interface.name)\(description) [\(interface.flags.joined(separator: ", "))]")
                }
            } catch {
                Diagnostics.error(error.message)
                throw ExitCode(2)
            }
            return
        }
        if input.read.isEmpty && input.interface == nil {
            throw ValidationError("give a capture with -r FILE (or '-' for standard input), or an interface with -i IFACE")
        }
        var frontend = Frontend(input: input, output: output, filter: try filters.makeFilter())
        frontend.keyLog = try Diagnostics.loadKeyLog(input.keylog, growing: input.interface != nil)
        let code = frontend.run()
        if code != 0 { throw ExitCode(code) }
    }
}

struct InputOptions: ParsableArguments {
    @Option(name: [.customShort("r"), .customLong("read")], help: ArgumentHelp("Read a capture file (pcap, pcapng; gzip, zstd, lz4, xz or bzip2 compressed too, by content) or a directory of them; '-' reads standard input. Repeatable.", valueName: "file"), completion: .file())
    var read: [String] = []

    @Option(name: [.customShort("i"), .customLong("interface")], help: ArgumentHelp("Capture live on an interface.", valueName: "iface"), completion: .shellCommand("icy-sniff -D 2>/dev/null | sed -e 's/^[0-9]*[.]//' -e 's/ .*//'"))
    var interface: String?

    @Option(name: [.customShort("f"), .customLong("filter")], help: ArgumentHelp("BPF capture filter, for files and interfaces alike.", valueName: "bpf"))
    var filterOption: String?

    @Argument(help: ArgumentHelp("A BPF filter as trailing words, as tcpdump takes it (icy-sniff -r x.pcap tcp port 80); or use -f.", valueName: "expression"))
    var expression: [String] = []

    /// The filter, from -f or the trailing words.
    var filter: String? { filterOption ?? (expression.isEmpty ? nil : expression.joined(separator: " ")) }

    @Flag(name: [.customShort("D"), .customLong("list-interfaces")], help: "List the interfaces a live capture can use, as tcpdump -D does, and exit.")
    var listInterfaces = false

    @Flag(name: .customShort("n"), help: "Accepted for tcpdump's sake: icy-sniff never resolves addresses or ports to names.")
    var noNames = false

    @Option(name: .customLong("keylog"), help: ArgumentHelp("Decrypt TLS and QUIC with the secrets in this NSS key log (SSLKEYLOGFILE, as browsers, curl and OpenSSL write it; docs/KEYS.md says how to get one from browsers, tools, apps and phones). Repeatable; re-read when it grows.", valueName: "file"), completion: .file())
    var keylog: [String] = []

    @Flag(name: .customLong("promisc"), help: "Put the interface into promiscuous mode.")
    var promiscuous = false

    @Option(name: [.customShort("c"), .customLong("count")], help: ArgumentHelp("Stop after this many packets.", valueName: "n"))
    var count: UInt64?

    @Option(name: [.customShort("w"), .customLong("write")], help: ArgumentHelp("Also save the packets read (live, or with -r those that pass the filter) to this pcap file, as tcpdump does.", valueName: "file"), completion: .file())
    var write: String?

    @Option(name: [.customShort("Z"), .customLong("user")], help: ArgumentHelp("Live capture: drop root privileges to this user after opening the interface (output files are then created as that user).", valueName: "user"), completion: .custom { _, _, _ in userNames() })
    var user: String?

    @Flag(name: .customLong("no-join"), help: "Read every capture on its own: do not join the pieces of a rotated set (tcpdump -C/-G, dumpcap -b, editcap splits) or the files given one by one into one stream.")
    var noJoin = false

    @Option(name: .customLong("file-reader"), help: ArgumentHelp("How pcap files are read: 'mapped' (default) reads them in place from a memory mapping, 'libpcap' through libpcap's own reader. Both give the same output; the second is there to compare with.", valueName: "mapped|libpcap"), completion: .list(PcapSource.FileReader.allCases.map(\.rawValue)))
    var fileReader: PcapSource.FileReader = .mapped

    @Flag(name: .customLong("strict"), help: "Exit with 1 when a capture is damaged (truncated, corrupt); by default that is a warning.")
    var strict = false

    @Option(name: .customLong("duration"), help: ArgumentHelp("Live capture: stop after this many seconds.", valueName: "seconds"))
    var duration: Double?

    @Option(name: [.customShort("B"), .customLong("buffer-size")], help: ArgumentHelp("Live capture: the kernel's capture buffer in KiB, as tcpdump -B (default: \(PcapSource.defaultBufferKiB), see docs/BENCHMARK.md).", valueName: "KiB"))
    var bufferKiB: Int?

    @Option(name: .customLong("max-connections"), help: ArgumentHelp("TCP connections followed at once, and half as many QUIC connections (default: \(ReassemblyLimits().maxConnections)): past it the longest idle quarter is ended early, flagged connection_evicted, so that a flood of connections cannot exhaust memory (about 5 KiB each with a request waiting). Raise it for a busy link.", valueName: "n"))
    var maxConnections: Int?

    @Option(name: .customLong("stats"), help: ArgumentHelp("Print a line of figures on standard error every this many seconds, and once more when a live capture ends: packets, kernel and interface drops since the last line, open connections, transactions per second, memory.", valueName: "seconds"))
    var statsSeconds: Double?
}

struct FilterOptions: ParsableArguments {
    @Option(name: .customLong("client"), help: ArgumentHelp("Only this device: its link-layer address (02:00:00:00:00:11: its IPv4 and IPv6 traffic alike; --devices lists them), the name it gave itself (a glob: 'Pixel*', from DHCP, mDNS or --leases), or a client address or network, e.g. 192.168.1.23 or 192.168.1.0/24 or fd00::/8 (repeatable). Its connections only, too.", valueName: "mac|address[/bits]"))
    var client: [String] = []

    @Option(name: .customLong("status"), help: ArgumentHelp("Only these statuses: codes and classes, e.g. 4xx,5xx,304 (0: no response).", valueName: "list"))
    var status: String?

    @Option(name: .customLong("method"), help: ArgumentHelp("Only these methods, e.g. GET,POST.", valueName: "list"))
    var method: String?

    @Option(name: .customLong("host"), help: ArgumentHelp("Only hosts containing this text (repeatable).", valueName: "text"))
    var host: [String] = []

    @Option(name: .customLong("type"), help: ArgumentHelp("Only responses whose Content-Type contains this text, e.g. image/ (repeatable).", valueName: "text"))
    var type: [String] = []

    @Option(name: .customLong("min-duration"), help: ArgumentHelp("Only transactions that took at least this many milliseconds.", valueName: "ms"))
    var minDuration: Double?

    @Option(name: .customLong("min-size"), help: ArgumentHelp("Only responses with at least this many body bytes (decoded).", valueName: "bytes"))
    var minSize: UInt64?

    func makeFilter() throws -> TransactionFilter {
        var f = TransactionFilter()
        do { for text in client { try f.addClient(text) } } catch { throw ValidationError(error.message) }
        if let status {
            do { try f.addStatuses(status) } catch { throw ValidationError(error.message) }
        }
        if let method { f.methods = Set(method.split(separator: ",").map { $0.uppercased() }) }
        f.hosts = host
        f.contentTypes = type
        f.minDurationMilliseconds = minDuration
        f.minSize = minSize
        return f
    }
}

struct OutputOptions: ParsableArguments {
    @Flag(name: .customShort("V"), help: "Show each transaction's request and response heads as sent, field by field (as tshark -V details a packet); same as --format heads.")
    var heads = false

    @Flag(name: .customLong("har"), help: "Write HAR 1.2 (same as --format har).")
    var har = false

    @Option(name: .customLong("format"), help: ArgumentHelp("Output format: table, tsv, csv, ndjson, har, heads (-V) or websocket (--websocket-messages). Default: table on a terminal, TSV otherwise.", valueName: "format"), completion: .list(["table", "tsv", "csv", "ndjson", "har", "heads", "websocket"]))
    var format: OutputFormat?

    @Flag(name: .customLong("websocket-messages"), help: "List WebSocket messages, one NDJSON row each (time, connection, URL, direction, opcode, size; the data with --bodies), instead of transactions; same as --format websocket.")
    var webSocketMessages = false

    /// The format the options name (--har, -V, --websocket-messages, --format), if any: the one
    /// place that reads them.
    var namedFormat: OutputFormat? {
        har ? .har : heads ? .heads : webSocketMessages ? .websocket : format
    }

    @Option(name: [.customShort("o"), .customLong("output")], help: ArgumentHelp("Write to a file (atomically: a temporary file, then renamed; a device or FIFO such as /dev/null is written directly). Without --format or --har, the format follows the file's extension: .har, .ndjson or .jsonl, .csv, .tsv.", valueName: "file"), completion: .file())
    var outputPath: String?

    /// The format the output file's extension names (as tshark and pandas read it): nil when
    /// there is no file or its extension names none.
    var formatFromPath: OutputFormat? {
        guard let path = outputPath?.lowercased() else { return nil }
        if path.hasSuffix(".har") { return .har }
        if path.hasSuffix(".ndjson") || path.hasSuffix(".jsonl") { return .ndjson }
        if path.hasSuffix(".csv") { return .csv }
        if path.hasSuffix(".tsv") { return .tsv }
        return nil
    }

    @Flag(name: .customLong("connections"), help: "List connections, TCP and QUIC (endpoints, handshake time, bytes, gaps, anomalies, TLS and QUIC facts) instead of transactions.")
    var connections = false

    @Flag(name: .customLong("devices"), help: "List devices instead of transactions: one per link-layer (MAC) address where the capture has them (else per client address), with the names it gave itself (DHCP, DHCPv6, mDNS), its addresses and when, an OS hint, its connections, requests and bytes.")
    var devices = false

    @Option(name: .customLong("leases"), help: ArgumentHelp("With --devices: names and addresses from the hotspot's lease file (dnsmasq's, as NetworkManager and hostapd set-ups write it, or ISC dhcpd's), for phones that joined before the capture began. A hint: what the packets show wins.", valueName: "file"), completion: .file())
    var leases: String? = nil

    @Flag(name: .customLong("bodies"), help: "Include request and response bodies in the HAR (content.text; base64 for binary types), each kept up to 16 MiB (beyond: cut and flagged body_truncated_in_memory; sizes stay exact).")
    var bodies = false

    @Flag(name: .customLong("har-estimates"), help: "Also write the exchanges estimated from encrypted connections without keys into the HAR, as entries marked _inferred (no method, status or path: HAR consumers replay entries, so not by default).")
    var harEstimates = false

    @Flag(name: .customLong("keep-secrets"), help: "Keep Cookie, Set-Cookie, Authorization values and secret query parameters (redacted by default).")
    var keepSecrets = false

    @Flag(name: .customLong("compact"), help: "Write JSON without indentation.")
    var compact = false

    @Flag(name: [.customShort("q"), .customLong("quiet")], help: "Do not print the summary and warnings on standard error (errors are still printed).")
    var quiet = false

    @Option(name: .customLong("fields"), help: ArgumentHelp("Columns of table/TSV/CSV output, comma-separated (see docs/OUTPUT.md): e.g. time,method,url,status,wait.", valueName: "list"), completion: .list(Field.allCases.map(\.rawValue)))
    var fields: String?

    @OptionGroup var batch: BatchOptions

    @OptionGroup var rotation: RotationOptions

    @Flag(name: .customLong("list-anomalies"), help: "Print the catalogue of anomaly names (Markdown) and exit.")
    var listAnomalies = false


    @Option(name: .customLong("serve"), help: ArgumentHelp("Serve a web view of the run on [ADDR:]PORT (the address is 127.0.0.1 unless given; any other needs the token the run prints): the transactions and encrypted connections as they come, filters, search, details, waterfalls, HAR and NDJSON exports (docs/WEBVIEW.md). With -r it keeps serving once the files are read, until Ctrl-C. Writes no table then, unless -o, --format or --har asks for an output.", valueName: "[addr:]port"))
    var serve: String?

    /// `--serve`'s address and port, checked (nil: not given).
    func serveAddress() throws -> (host: String, port: Int)? {
        guard let text = serve else { return nil }
        var host = "127.0.0.1", portText = Substring(text)
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw ValidationError("--serve takes PORT or ADDR:PORT ([::1]:8080 for IPv6), not '\(text)'")
            }
            host = String(text[text.index(after: text.startIndex)..<close])
            portText = text[text.index(close, offsetBy: 2)...]
        } else if let colon = text.lastIndex(of: ":") {
            if !text[..<colon].isEmpty { host = String(text[..<colon]) }
            portText = text[text.index(after: colon)...]
        }
        guard let port = Int(portText), port >= 0, port <= 65535 else {
            throw ValidationError("--serve takes PORT or ADDR:PORT (a port from 0 to 65535; 0: any free one), not '\(text)'")
        }
        return (host, port)
    }

    @Flag(name: .customLong("list-sets"), help: "Print the capture sets the -r inputs make (one JSON object per line: name, pieces, joinedByName, missing numbers) and exit; a distributed run plans its units of work with it.")
    var listSets = false
}

/// Batch runs over many captures: --out-dir, -j, --force.
struct BatchOptions: ParsableArguments {
    @Option(name: .customLong("out-dir"), help: ArgumentHelp("Batch: write one output per capture into this directory, named after the capture (HAR unless --format says otherwise).", valueName: "dir"), completion: .directory)
    var outDir: String?

    @Option(name: [.customShort("j"), .customLong("jobs")], help: ArgumentHelp("Batch: captures analysed in parallel (default: the number of cores).", valueName: "n"))
    var jobs: Int?

    @Flag(name: .customLong("force"), help: "Batch: analyse again captures whose output is newer than the capture.")
    var force = false
}

/// Rotating the outputs as tcpdump does: -G, -C, -W.
struct RotationOptions: ParsableArguments {
    @Option(name: .customShort("G"), help: ArgumentHelp("Rotate -o and -w: a new file every this many seconds (aligned to local midnight, so -G 3600 starts on the hour); the names are strftime(3) patterns of the period's start, e.g. -o 'http-%Y%m%d-%H.ndjson'. A transaction goes to the file of the period in which it completed. SIGHUP also starts new files.", valueName: "seconds"))
    var seconds: Int?

    @Option(name: .customShort("C"), help: ArgumentHelp("Rotate -o and -w: a new file once the current one holds this many millions of bytes (or 100k, 10m, 1g: KiB, MiB, GiB), as tcpdump -C. Later files are numbered before the extension: http.1.ndjson, http.2.ndjson, …", valueName: "size"))
    var size: String?

    @Option(name: .customShort("W"), help: ArgumentHelp("With -G or -C: keep the last N files this run wrote (older ones are removed), a ring as tcpdump -W.", valueName: "n"))
    var keep: Int?

    /// -G, -C and -W, checked (nil: none given).
    func policy() throws -> RotationPolicy? {
        if seconds == nil && size == nil && keep == nil { return nil }
        var policy = RotationPolicy()
        if let g = seconds {
            guard g >= 1 else { throw ValidationError("-G needs at least 1 second") }
            policy.seconds = g
        }
        if let text = size {
            guard let bytes = Self.bytes(text), bytes >= 1 else {
                throw ValidationError("-C takes a size in millions of bytes (10), or with a unit: 100k, 10m, 1g")
            }
            policy.bytes = bytes
        }
        if let w = keep {
            guard w >= 1 else { throw ValidationError("-W needs at least 1 file") }
            guard seconds != nil || size != nil else { throw ValidationError("-W keeps a ring of rotated files: give -G or -C with it") }
            policy.keep = w
        }
        return policy
    }

    /// tcpdump's -C: a number of 10^6 bytes, or with k, m, g: KiB, MiB, GiB.
    static func bytes(_ text: String) -> Int? {
        let units: [Character: Double] = ["k": 1024, "K": 1024, "m": 1_048_576, "M": 1_048_576, "g": 1_073_741_824, "G": 1_073_741_824]
        var number = Substring(text), unit = 1_000_000.0
        if let last = text.last, let u = units[last] { number = text.dropLast(); unit = u }
        guard let value = Double(number), value > 0, value.isFinite else { return nil }
        let bytes = value * unit
        return bytes < Double(Int.max / 2) ? Int(bytes.rounded(.up)) : nil
    }
}
