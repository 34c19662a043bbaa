#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import IcySniffCore

/// The captures named on the command line: files as given, directories walked recursively and
/// their captures recognised by content (compressed or not).
struct CaptureList {
    struct Capture: Sendable {
        var path: String
        /// Output name relative to --out-dir, without extension.
        var outputStem: String
    }
    var captures: [Capture] = []
    var problems: [String] = []
    var fromDirectory = false
    var skippedNonCaptures = 0

    static func expand(_ inputs: [String]) -> CaptureList {
        var list = CaptureList()
        for input in inputs {
            if input != "-", FileSystem.kind(of: input) == .directory {
                list.fromDirectory = true
                var unreadable: [String] = []
                guard let entries = FileSystem.walk(input, unreadable: &unreadable) else {
                    list.problems.append("cannot read directory '\(input)'")
                    continue
                }
                for dir in unreadable { list.problems.append("cannot read directory '\(dir)'") }
                var found: [String] = []
                for relative in entries {
                    if CaptureFile.kind(of: FileSystem.join(input, relative)) != nil { found.append(relative) } else { list.skippedNonCaptures += 1 }
                }
                for relative in found.sorted() {
                    list.captures.append(Capture(path: FileSystem.join(input, relative), outputStem: stem(relative)))
                }
            } else {
                list.captures.append(Capture(path: input, outputStem: input == "-" ? "stdin" : stem(FileSystem.lastComponent(input))))
            }
        }
        // Two captures may map to one output name (a/x.pcap and b/x.pcap given as two inputs):
        // later ones get "-2", "-3", … so no output overwrites another.
        var seen: [String: Int] = [:]
        for i in list.captures.indices {
            let stem = list.captures[i].outputStem
            let n = seen[stem, default: 0] + 1
            seen[stem] = n
            if n > 1 { list.captures[i].outputStem = "\(stem)-\(n)" }
        }
        return list
    }

    /// "a/b.pcap.gz" → "a/b".
    static func stem(_ name: String) -> String {
        var s = name
        for suffix in [".gz", ".pcapng", ".pcap", ".cap", ".dmp"] where s.lowercased().hasSuffix(suffix) {
            s = String(s.dropLast(suffix.count))
        }
        return s.isEmpty ? name : s
    }
}

/// Progress shared between batch workers and the thread that draws the progress bar.
final class BatchProgress: @unchecked Sendable {
    private let lock = Lock()
    private var current: [Int: Int64] = [:]
    private var finishedBytes: Int64 = 0
    private(set) var finished = 0

    func update(_ index: Int, position: Int64) { lock.withLock { current[index] = position } }
    func finish(_ index: Int, size: Int64) {
        lock.withLock { current[index] = nil; finishedBytes += size; finished += 1 }
    }
    var snapshot: (done: Int, bytes: Int64) {
        lock.withLock { (finished, finishedBytes + current.values.reduce(0, +)) }
    }
}

/// What one capture of a batch gave.
struct CaptureResult: Sendable {
    enum Status: Sendable { case ok, damaged(String), failed(String), upToDate, interrupted }
    var status: Status = .ok
    var packets: UInt64 = 0
    var transactions: UInt64 = 0
    var bytes: Int64 = 0
    /// Rendered rows for a merged output.
    var rendered: [UInt8] = []
}

/// Runs captures independently and in parallel (`-j`, default all cores); each output is
/// written atomically; with --out-dir a capture whose output is newer is skipped unless --force.
struct BatchRunner {
    var frontend: Frontend
    var captures: [CaptureList.Capture]
    /// Files met while walking directories that are not captures (skipped).
    var skippedNonCaptures = 0

    var format: OutputFormat {
        if frontend.output.har { return .har }
        if let f = frontend.output.format { return f }
        if frontend.output.outDir != nil { return .har }
        return OutputFile().isTerminal ? .table : .tsv
    }

    func run() -> Int32 {
        let started = monotonicSeconds()
        let format = self.format
        let outDir = frontend.output.outDir
        if let outDir {
            do { try FileSystem.makeDirectories(outDir) } catch {
                Diagnostics.error("cannot create '\(outDir)': \(error.message)")
                return Frontend.Exit.outputFailed
            }
        }
        // One HAR for several captures: entries of all of them, sorted; analysed one after another.
        if outDir == nil && format == .har { return runMergedHAR() }

        let merged: OutputFile?
        if outDir == nil {
            do { merged = try frontend.output.outputPath.map { path throws(OutputError) in try OutputFile(path: path) } ?? OutputFile() } catch {
                Diagnostics.error(error.message)
                return Frontend.Exit.outputFailed
            }
        } else {
            merged = nil
        }
        let jobs = max(1, min(frontend.output.jobs ?? availableProcessors(), captures.count))
        let progress = BatchProgress()
        let results = ResultBox(count: captures.count)
        let next = IndexBox()
        let totalBytes = captures.reduce(Int64(0)) { $0 + (FileSystem.size(of: $1.path) ?? 0) }
        let group = DispatchGroup()
        let frontend = self.frontend
        let captures = self.captures
        let fields = frontend.fields
        let isMerged = merged != nil
        for _ in 0..<jobs {
            DispatchQueue.global().async(group: group) {
                while let i = next.take(below: captures.count) {
                    let result = BatchRunner.analyse(captures[i], index: i, frontend: frontend, format: format, fields: fields,
                                                     merged: isMerged, progress: progress)
                    results.set(i, result)
                }
            }
        }
        let showProgress = isatty(2) == 1 && !frontend.output.quiet
        while group.wait(timeout: .now() + 0.25) == .timedOut {
            if showProgress { drawProgress(progress, total: captures.count, totalBytes: totalBytes, started: started) }
        }
        if showProgress { Diagnostics.raw("\r\u{1B}[K") }

        var code = Frontend.Exit.ok
        var summary = RunStats()
        var failures = 0, damaged = 0, upToDate = 0
        if let merged, format != .ndjson, !frontend.output.connections {
            TableWriter(format: TableFormat(format), output: merged, options: frontend.exportOptions, fields: fields).writeHeader()
        }
        for (i, r) in results.all.enumerated() {
            let path = captures[i].path
            summary.packets += r.packets
            summary.transactions += r.transactions
            switch r.status {
            case .ok: break
            case .interrupted: Diagnostics.warning("'\(path)': interrupted; its output holds what was analysed")
            case .upToDate: upToDate += 1
            case .damaged(let message):
                damaged += 1
                Diagnostics.warning("'\(path)' is damaged: \(message); what came before was analysed")
                if frontend.input.strict { code = max(code, Frontend.Exit.damaged) }
            case .failed(let message):
                failures += 1
                Diagnostics.error(message)
                code = max(code, Frontend.Exit.badInput)
            }
            merged?.write(r.rendered)
        }
        do { try merged?.commit() } catch {
            Diagnostics.error(error.message)
            return Frontend.Exit.outputFailed
        }
        if !frontend.output.quiet {
            let seconds = monotonicSeconds() - started
            var line = "icy-sniff: \(captures.count) captures (\(failures) failed, \(damaged) damaged"
            if upToDate > 0 { line += ", \(upToDate) up to date" }
            if skippedNonCaptures > 0 { line += ", \(skippedNonCaptures) other files skipped" }
            line += "), \(summary.packets) packets, \(summary.transactions) HTTP transactions in \(seconds.fixed(2)) s"
            Diagnostics.info(line)
        }
        return code
    }

    private func drawProgress(_ progress: BatchProgress, total: Int, totalBytes: Int64, started: Double) {
        let (done, bytes) = progress.snapshot
        let elapsed = max(0.001, monotonicSeconds() - started)
        let rate = Double(bytes) / elapsed
        let fraction = totalBytes > 0 ? min(1, Double(bytes) / Double(totalBytes)) : Double(done) / Double(max(1, total))
        let width = 24
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let left = rate > 0 && totalBytes > bytes ? Double(totalBytes - bytes) / rate : 0
        let line = "\r[\(bar)] \(done)/\(total) captures, \((Double(bytes) / 1e6).fixed(1))/\((Double(totalBytes) / 1e6).fixed(1)) MB, "
            + "\((rate / 1e6).fixed(1)) MB/s, \(left.fixed(0)) s left\u{1B}[K"
        Diagnostics.raw(line)
    }

    /// Analyses one capture on the calling thread; everything it creates stays on that thread.
    static func analyse(_ capture: CaptureList.Capture, index: Int, frontend: Frontend, format: OutputFormat, fields: [Field],
                        merged: Bool, progress: BatchProgress) -> CaptureResult {
        var result = CaptureResult()
        let size = FileSystem.size(of: capture.path) ?? 0
        defer { progress.finish(index, size: size) }
        var outputPath: String? = nil
        if let outDir = frontend.output.outDir {
            let path = FileSystem.join(outDir, capture.outputStem + "." + format.fileExtension)
            outputPath = path
            if !frontend.output.force,
               let outTime = FileSystem.modificationTime(of: path),
               let inTime = FileSystem.modificationTime(of: capture.path), outTime >= inTime {
                result.status = .upToDate
                return result
            }
            try? FileSystem.makeDirectories(FileSystem.deletingLastComponent(path))
        }
        let out: OutputFile
        do { out = try outputPath.map { p throws(OutputError) in try OutputFile(path: p) } ?? OutputFile(memory: true) } catch {
            result.status = .failed(error.message)
            return result
        }
        var factory = frontend.sinkFactory(format: format)
        factory.fields = fields
        factory.writesHeader = !merged
        let (head, sink) = factory.make(writingTo: out)
        let pipeline = Pipeline(sink: head, options: frontend.pipelineOptions)
        var driver = CaptureDriver(captureFilter: frontend.input.filter, maxPackets: frontend.input.count)
        driver.shouldStop = { Signals.stop }
        let outcome = driver.run(capture.path, through: pipeline) { source in progress.update(index, position: source.inputPosition) }
        switch outcome.status {
        case .completed: break
        case .interrupted: result.status = .interrupted
        case .damaged(let message): result.status = .damaged(message)
        case .empty: result.status = .damaged("empty file, no packets")
        case .failed(let message): result.status = .failed(message)
        }
        // Nothing could be read: no output is committed (an earlier one stays as it was).
        guard outcome.analysed else { return result }
        pipeline.finish()
        do {
            try sink.finish(comment: outcome.outputComment(signalled: true))
            try out.commit()
        } catch {
            result.status = .failed(error.message)
        }
        result.packets = pipeline.stats.packets
        result.transactions = pipeline.stats.transactions
        if merged { result.rendered = out.takeBytes() }
        return result
    }

    private func runMergedHAR() -> Int32 {
        var single = frontend
        single.input.read = captures.map(\.path)
        return single.runSingle()
    }
}

final class ResultBox: @unchecked Sendable {
    private let lock = Lock()
    private var results: [CaptureResult]
    init(count: Int) { results = Array(repeating: CaptureResult(), count: count) }
    func set(_ i: Int, _ r: CaptureResult) { lock.withLock { results[i] = r } }
    var all: [CaptureResult] { lock.withLock { results } }
}

final class IndexBox: @unchecked Sendable {
    private let lock = Lock()
    private var next = 0
    func take(below limit: Int) -> Int? {
        lock.withLock {
            guard next < limit else { return nil }
            defer { next += 1 }
            return next
        }
    }
}
