import Glibc
import ArgumentParser
import IcySniffCore

enum ReportFormat: String, ExpressibleByArgument, CaseIterable { case text, json }

/// The one output of `report` and `diff`: written atomically to `-o` (or standard output), the
/// text fitted to the width of a terminal (or COLUMNS) and whole lines otherwise; exit 3 with one
/// line when it cannot be written.
enum CommandOutput {
    static func write(to path: String?, _ body: (OutputFile, _ textWidth: Int?) -> Void) throws {
        let out: OutputFile
        do { out = try path.map { p throws(OutputError) in try OutputFile(path: p) } ?? OutputFile() } catch {
            Diagnostics.error(error.message)
            throw ExitCode(ExitStatus.outputFailed.rawValue)
        }
        let columns = getenv("COLUMNS").map { String(cString: $0) } ?? ""
        body(out, out.isTerminal || !columns.isEmpty ? TableWriter.tableWidth(terminal: out.isTerminal) : nil)
        do { try out.commit() } catch {
            Diagnostics.error(error.message)
            throw ExitCode(ExitStatus.outputFailed.rawValue)
        }
    }
}

struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Caching and connection report: avoidable requests, revalidations, keep-alive reuse, compression, slow and failing requests.",
        discussion: "One report per capture, and one for all of them together when there are several. 'Avoidable' means a private cache following RFC 9111 would have answered the request from a stored response that was still fresh (docs/CACHE.md)."
    )

    @Option(name: [.customShort("r"), .customLong("read")], help: ArgumentHelp("A capture file or directory (repeatable); '-' reads standard input.", valueName: "file"))
    var read: [String] = []

    @Option(name: [.customShort("f"), .customLong("filter")], help: ArgumentHelp("BPF capture filter.", valueName: "bpf"))
    var filter: String?

    @Option(name: .customLong("keylog"), help: ArgumentHelp("Decrypt TLS and QUIC with the secrets in this NSS key log (repeatable).", valueName: "file"))
    var keylog: [String] = []

    @Option(name: .customLong("format"), help: "text (default) or json.")
    var format: ReportFormat = .text

    @Option(name: [.customShort("o"), .customLong("output")], help: ArgumentHelp("Write to a file (atomically).", valueName: "file"))
    var outputPath: String?

    @Flag(name: .customLong("no-join"), help: "Read every capture on its own: do not join the pieces of a rotated set (tcpdump -C/-G, dumpcap -b, editcap splits) into one report.")
    var noJoin = false

    @Flag(name: .customLong("keep-secrets"), help: "Keep secret query parameters (token, key, password, …) in the URLs listed (redacted by default, as in every output).")
    var keepSecrets = false

    func validate() throws {
        if read.isEmpty { throw ValidationError("give a capture with -r FILE") }
    }

    func run() throws {
        // Files named one by one are separate captures, one report each (the pieces of a
        // rotated set found in a folder are one stream, unless --no-join).
        let expanded = CaptureList.expand(read, join: !noJoin, joinListed: false)
        var code: Int32 = 0
        for problem in expanded.problems { Diagnostics.error(problem); code = 2 }
        for warning in expanded.warnings { Diagnostics.warning(warning) }
        var reports: [Report] = []
        var runOptions = AnalysisRun.Options()
        runOptions.pipeline.keyLog = try Diagnostics.loadKeyLog(keylog)
        runOptions.captureFilter = filter
        // One report per capture set (the pieces of a rotated capture are one stream), and for
        // several, one of them all, fed the same judged transactions (for one it would be the
        // same report: its tables are not built twice).
        var exportOptions = ExportOptions()
        exportOptions.keepSecrets = keepSecrets
        let combined = ReportCollector(options: exportOptions)
        var analysed = 0
        var allNames: [UInt64: String] = [:]
        for set in expanded.sets {
            let collector = ReportCollector(options: exportOptions)
            let sink: any TransactionSink = expanded.sets.count > 1 ? TeeSink(collector, combined) : collector
            let run = AnalysisRun(sink: CacheJudgingSink(next: sink), options: runOptions)
            run.driver.shouldStop = { Signals.stop }
            let outcomes = run.run([set])
            for outcome in outcomes {
                if let note = outcome.continuity { Diagnostics.warning(note) }
                Diagnostics.show(outcome.diagnostic(signalled: Signals.stop))
                code = max(code, outcome.exitStatus(strict: false).rawValue)
                if outcome.stopsRun { throw ExitCode(code) }
            }
            guard outcomes.contains(where: \.analysed) else { continue }
            run.finish()
            analysed += 1
            var report = collector.report(capture: set.pieces.count == 1 ? set.pieces[0].path : set.name)
            let names = run.pipeline.devices.names()
            report.nameDevices(names)
            reports.append(report)
            allNames.merge(names) { first, _ in first }
        }
        if analysed > 1 {
            var report = combined.report(capture: "all \(analysed) captures")
            report.nameDevices(allNames)
            reports.append(report)
        }
        // Stopped by a signal: each report says it is partial, in the file too.
        if Signals.stop { for i in reports.indices { reports[i].interrupted = true } }
        try CommandOutput.write(to: outputPath) { out, width in
            switch format {
            case .json: out.write(ReportWriter.json(reports))
            case .text: for (i, r) in reports.enumerated() { out.write((i > 0 ? "\n" : "") + ReportWriter.text(r, width: width)) }
            }
        }
        if Signals.stop {
            Diagnostics.warning("interrupted: the report covers only the packets read before the signal")
            code = max(code, ExitStatus.interrupted.rawValue)
        }
        if code != 0 { throw ExitCode(code) }
    }
}
