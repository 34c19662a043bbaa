import Glibc
import ArgumentParser
import FoundationEssentials
import IcySniffCore

/// `icy-sniff diff BEFORE AFTER`: what changed between two runs (docs/OUTPUT.md, Diff). Each side
/// is a capture (analysed as `report` would: keys, cache judgement), a HAR or an NDJSON file.
struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "What changed between two captures (or HARs, or NDJSON files): requests added and removed, made more or fewer times, status, cache verdict and size changes, each host's requests, bytes and median time.",
        discussion: "Requests are matched by method and URL, with volatile query values (timestamps, cache busters, nonces, UUIDs, long hex or digit runs, redacted secrets) masked. Each side is a capture file or folder, a HAR (icy-sniff's, or a browser's), or icy-sniff's NDJSON. Exit code 0 whether or not something changed, 2 when a side cannot be read."
    )

    @Argument(help: ArgumentHelp("The run before: a capture, a HAR or an NDJSON file.", valueName: "before"))
    var before: String

    @Argument(help: ArgumentHelp("The run after.", valueName: "after"))
    var after: String

    @Option(name: .customLong("keylog"), help: ArgumentHelp("Decrypt TLS and QUIC in the captures with the secrets in this NSS key log (repeatable).", valueName: "file"))
    var keylog: [String] = []

    @Option(name: .customLong("format"), help: "text (default) or json.")
    var format: ReportFormat = .text

    @Option(name: [.customShort("o"), .customLong("output")], help: ArgumentHelp("Write to a file (atomically).", valueName: "file"))
    var outputPath: String?

    @Option(name: .customLong("client"), help: ArgumentHelp("Compare only this device's requests on both sides: its link-layer address (02:00:00:00:00:11, its IPv4 and IPv6 requests alike; icy-sniff --devices lists them), or a client address or network (192.168.1.23, 192.168.1.0/24, fd00::/8).", valueName: "mac|address[/bits]"))
    var client: String?

    @Option(name: .customLong("client-before"), help: ArgumentHelp("Only this device's requests before; with --client-after, two phones of one capture compare: icy-sniff diff hotspot.pcap hotspot.pcap --client-before 192.168.4.21 --client-after 192.168.4.37 (or their link-layer addresses).", valueName: "mac|address[/bits]"))
    var clientBefore: String?

    @Option(name: .customLong("client-after"), help: ArgumentHelp("Only this device's requests after.", valueName: "mac|address[/bits]"))
    var clientAfter: String?

    @Flag(name: .customLong("keep-secrets"), help: "Keep secret query parameters (token, key, password, …) in the URLs listed (redacted by default, as in every output).")
    var keepSecrets = false

    func validate() throws {
        if client != nil && (clientBefore != nil || clientAfter != nil) {
            throw ValidationError("give --client for both sides, or --client-before and --client-after, not both")
        }
        for text in [client, clientBefore, clientAfter].compactMap({ $0 }) {
            do { var f = TransactionFilter(); try f.addClient(text) } catch { throw ValidationError(error.message) }
        }
    }

    func run() throws {
        var exportOptions = ExportOptions()
        exportOptions.keepSecrets = keepSecrets
        let keyLog = try Diagnostics.loadKeyLog(keylog)
        var sides: [ComparisonSide] = []
        for (path, device) in [(before, clientBefore ?? client), (after, clientAfter ?? client)] {
            let network = try device.map { (text) throws(FilterError) in var f = TransactionFilter(); try f.addClient(text); return f }
            let name = device.map { "\(path) (client \($0))" } ?? path
            switch Self.read(path, name: name, client: network, keyLog: keyLog, options: exportOptions) {
            case .success(let side): sides.append(side)
            case .failure(let problem):
                if !problem.text.isEmpty { Diagnostics.error(problem.text) }
                throw ExitCode(ExitStatus.badInput.rawValue)
            }
            if Signals.stop { throw ExitCode(ExitStatus.interrupted.rawValue) }
        }
        let comparison = Comparison(sides[0], sides[1])
        try CommandOutput.write(to: outputPath) { out, width in
            switch format {
            case .json: out.write(ComparisonWriter.json(comparison))
            case .text: out.write(ComparisonWriter.text(comparison, width: width))
            }
        }
    }

    /// Why a side cannot be compared ("": a diagnostic said it already).
    struct Problem: Error { var text: String }

    /// One side: by its content, a HAR (a JSON object with `log`), NDJSON (JSON objects, one per
    /// line), or else a capture.
    static func read(_ path: String, name: String, client: TransactionFilter?, keyLog: KeyLog?,
                     options: ExportOptions) -> Result<ComparisonSide, Problem> {
        let side = ComparisonSide(name: name)
        var capturePath = path
        if FileSystem.kind(of: path) != .directory {
            guard let input = DiffInput(path: path) else {
                return .failure(Problem(text: "\(path): cannot be read: \(String(cString: strerror(errno)))"))
            }
            if input.peek() == UInt8(ascii: "{") { return readJSON(input, path: path, into: side, client: client, options: options) }
            capturePath = input.captureFeed(path: path)
        }
        let expanded = CaptureList.expand([capturePath], join: true, joinListed: false)
        if let problem = expanded.problems.first { return .failure(Problem(text: problem)) }
        guard !expanded.sets.isEmpty else { return .failure(Problem(text: "\(path): no captures found")) }
        var pipelineOptions = PipelineOptions()
        pipelineOptions.keyLog = keyLog
        pipelineOptions.deviceDirectory = client?.directory
        var runOptions = AnalysisRun.Options()
        runOptions.pipeline = pipelineOptions
        for set in expanded.sets {
            let filter = client ?? TransactionFilter()
            let rows = ComparisonSink(side: side, options: options)
            let run = AnalysisRun(sink: CacheJudgingSink(next: filter.isEmpty ? rows : FilteringSink(filter: filter, next: rows)),
                                  options: runOptions)
            run.driver.shouldStop = { Signals.stop }
            for outcome in run.run([set]) {
                Diagnostics.show(outcome.diagnostic(signalled: Signals.stop))
                if outcome.stopsRun || !outcome.analysed && outcome.exitStatus(strict: false) == .badInput {
                    return .failure(Problem(text: ""))   // the diagnostic above said why
                }
            }
            run.finish()
        }
        return .success(side)
    }

    // A HAR's entries and an NDJSON row, as far as the comparison reads them.
    struct HAREntry: Decodable {
        struct Request: Decodable { var method: String; var url: String }
        struct Response: Decodable { var status: Int; var bodySize: Int? }
        struct Cache: Decodable { var verdict: String? }
        var request: Request
        var response: Response
        var time: Double?
        var _cache: Cache?
        var _clientIPAddress: String?
        var _device: String?
        /// An estimate from an encrypted connection (`--har-estimates`): no request to compare.
        var _inferred: Bool?
    }

    struct Row: Decodable {
        var method: String?
        var url: String?
        var status: Int?
        var response_encoded_len: Int?
        var cache: String?
        var time_ms: Double?
        var client_ip: String?
        var device: String?
        /// An exchange estimated from an encrypted connection's records: no request to compare.
        var inferred: Bool?
        /// "connection": the row of an encrypted connection (its handshake or its end).
        var type: String?
    }

    /// Whether a row's client (its address and device, as an output wrote them) is the one
    /// `client` names: an address or network, or a device's link-layer address (always without one).
    static func isFrom(_ address: String?, device: String?, _ client: TransactionFilter?) -> Bool {
        guard let client else { return true }
        guard let address, let parsed = IPAddress(text: address) else { return false }
        return client.matchesClient(parsed, device: device.flatMap(MACAddress.init(text:))?.raw ?? 0)
    }

    /// A HAR entry at a time, or an NDJSON line at a time (`DiffInput`): a HAR by its first
    /// key, `log`. A line that is no transaction row, or longer than a row can be, fails the side
    /// with its number; so does a HAR entry that is not one (one past the cap is counted, said).
    static func readJSON(_ input: DiffInput, path: String, into side: ComparisonSide, client: TransactionFilter?,
                         options: ExportOptions) -> Result<ComparisonSide, Problem> {
        let decoder = JSONDecoder()
        if input.firstKey() == "log" {
            var bad = 0, tooLarge = 0
            let found = input.forEachEntry { bytes in
                guard let bytes else { tooLarge += 1; return }
                guard let e = try? decoder.decode(HAREntry.self, from: Data(bytes)) else { bad += 1; return }
                guard isFrom(e._clientIPAddress, device: e._device, client), e._inferred != true else { return }
                side.add(ComparisonRow(method: e.request.method, url: e.request.url, status: e.response.status,
                                       bytes: max(0, e.response.bodySize ?? 0), verdict: e._cache?.verdict ?? "",
                                       timeMilliseconds: e.time ?? 0, options: options))
            }
            if input.failed { return .failure(Problem(text: "\(path): cannot be read to its end")) }
            guard found, bad == 0 else {
                return .failure(Problem(text: found ? "\(path): \(bad) of its entries are not HAR entries" : "\(path): a JSON object without log.entries is not a HAR"))
            }
            if tooLarge > 0 { Diagnostics.warning("\(path): \(tooLarge) entries larger than \(DiffInput.maxEntry >> 20) MiB were not compared") }
            return .success(side)
        }
        var lineNumber = 0
        while true {
            lineNumber += 1
            switch input.line(max: DiffInput.maxRow) {
            case .end:
                return input.failed ? .failure(Problem(text: "\(path): cannot be read to its end")) : .success(side)
            case .tooLong:
                return .failure(Problem(text: "\(path): line \(lineNumber) is longer than \(DiffInput.maxRow >> 20) MiB: not a transaction of icy-sniff's NDJSON"))
            case .line(let l):
                if l.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }) { continue }
                guard let row = try? decoder.decode(Row.self, from: Data(l)), let url = row.url else {
                    return .failure(Problem(text: "\(path): line \(lineNumber) is not a transaction of icy-sniff's NDJSON (nor is the file a HAR)"))
                }
                guard isFrom(row.client_ip, device: row.device, client), row.inferred != true, row.type == nil else { continue }
                side.add(ComparisonRow(method: row.method ?? "", url: url, status: row.status ?? 0, bytes: row.response_encoded_len ?? 0,
                                       verdict: row.cache.map(CacheAssessment.verdict(ofLabel:)) ?? "", timeMilliseconds: row.time_ms ?? 0,
                                       options: options))
            }
        }
    }
}
