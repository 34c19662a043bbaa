#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import IcySniffCore

/// The captures named on the command line: files as given, directories walked recursively and
/// their captures recognised by content (compressed or not), grouped into sets (`CaptureSets`:
/// the pieces of a rotated capture are one unit, read as one stream) unless `--no-join`.
struct CaptureList {
    var sets: [CaptureSet] = []
    var problems: [String] = []
    var fromDirectory = false
    var skippedNonCaptures = 0
    /// Said, and the run goes on (FIFOs and devices in a directory).
    var warnings: [String] = []

    /// All captures, set by set, piece by piece.
    var paths: [String] { sets.flatMap(\.paths) }

    /// - join: group pieces into sets; `joinListed`: files named one by one join as a list (runs
    ///   with one output), else they are grouped by name as files found in folders are.
    static func expand(_ inputs: [String], join: Bool = true, joinListed: Bool = true) -> CaptureList {
        var list = CaptureList()
        var found: [CaptureSets.Input] = []
        for input in inputs {
            if input != "-", FileSystem.kind(of: input) == .directory {
                list.fromDirectory = true
                var unreadable: [String] = []
                var special: [(path: String, kind: String)] = []
                guard let entries = FileSystem.walk(input, unreadable: &unreadable, special: &special) else {
                    list.problems.append("cannot read directory '\(input)'")
                    continue
                }
                for dir in unreadable { list.problems.append("cannot read directory '\(dir)'") }
                for (path, kind) in special {
                    list.warnings.append("'\(path)' is \(kind), not read in a directory (opening it could wait forever): give it with -r to read it")
                }
                var captures: [String] = []
                for relative in entries {
                    // A file named as a capture is one that failed, not another file: it is
                    // opened, said, and counted failed (exit 2, as when given alone).
                    if CaptureFile.kind(of: FileSystem.join(input, relative)) != nil || namedAsCapture(relative) {
                        captures.append(relative)
                    } else {
                        list.skippedNonCaptures += 1
                    }
                }
                for relative in captures.sorted() {
                    found.append(.init(path: FileSystem.join(input, relative), stem: stem(relative), fromDirectory: true))
                }
            } else {
                found.append(.init(path: input, stem: input == "-" ? "stdin" : stem(FileSystem.lastComponent(input)), fromDirectory: false))
            }
        }
        if join {
            list.sets = CaptureSets.group(found, joinListed: joinListed)
        } else {
            list.sets = found.map { CaptureSet(name: $0.stem, pieces: [.init(path: $0.path, stem: $0.stem)], joinedByName: false) }
        }
        // Two sets may map to one output name (a/x.pcap and b/x.pcap given as two inputs):
        // later ones get "-2", "-3", … so no output overwrites another.
        var seen: [String: Int] = [:]
        for i in list.sets.indices {
            let stem = list.sets[i].name
            let n = seen[stem, default: 0] + 1
            seen[stem] = n
            if n > 1 { list.sets[i].name = "\(stem)-\(n)" }
        }
        return list
    }

    /// A capture's name without its compression and its capture extension (`x` of
    /// `x.pcapng.gz`, of tcpdump's rotated `x.pcap1`); nil when the name has no capture
    /// extension. The one reading of capture names for `namedAsCapture` and `keyLogBeside`.
    static func captureBase(_ name: String) -> Substring? {
        var s = Substring(name)
        for suffix in [".gz", ".zst", ".xz", ".bz2", ".lz4"] where s.lowercased().hasSuffix(suffix) { s = s.dropLast(suffix.count); break }
        let counted = s.reversed().prefix { $0.isNumber }.count
        let named = s.dropLast(counted)
        for suffix in [".pcapng", ".pcap", ".cap", ".dmp"] where named.lowercased().hasSuffix(suffix) { return named.dropLast(suffix.count) }
        return nil
    }

    /// Whether a file's name says it is a capture (`x.pcap`, `x.pcapng.gz`, `x.cap`; tcpdump's
    /// rotated `x.pcap1`), compressed or not.
    static func namedAsCapture(_ name: String) -> Bool { captureBase(name) != nil }

    /// The key log beside a capture, `NAME.keys` for `NAME.pcap` (`.pcapng`, compressed or
    /// not), when there is one.
    static func keyLogBeside(_ capture: String) -> String? {
        guard capture != "-", FileSystem.kind(of: capture) == .file, let base = captureBase(capture) else { return nil }
        let keys = String(base) + ".keys"
        return FileSystem.kind(of: keys) == .file ? keys : nil
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
    /// `failed`: the capture could not be read (exit 2); `outputFailed`: its output could not be
    /// written (exit 3, as for -o).
    enum Status: Sendable { case ok, damaged(String), failed(String), outputFailed(String), upToDate, interrupted }
    var status: Status = .ok
    /// False for a capture a signal stopped the batch before (no output, nothing said).
    var started = false
    /// The set's run figures (packets, transactions, anomalies), merged into the batch's line.
    var stats = RunStats()
    var bytes: Int64 = 0
    /// Rendered rows for a merged output.
    var rendered: [UInt8] = []
    /// Warnings about the set's pieces (one that does not continue the one before).
    var notes: [String] = []
}

/// Runs capture sets independently and in parallel (`-j`, default all cores), each set's pieces
/// in turn as one stream; each output is written atomically, named after the set; with --out-dir
/// a set whose output is newer than all its pieces is skipped unless --force.
struct BatchRunner {
    var frontend: Frontend
    var captures: [CaptureSet]
    /// Files met while walking directories that are not captures (skipped).
    var skippedNonCaptures = 0

    var format: OutputFormat {
        if let f = frontend.output.namedFormat { return f }
        if frontend.output.batch.outDir != nil { return .har }
        return OutputFile().isTerminal ? .table : .tsv
    }

    /// A merged output (no --out-dir) with the default columns.
    var isMergedDefault: Bool { frontend.output.batch.outDir == nil && frontend.output.fields == nil }

    func run() -> Int32 {
        let started = monotonicSeconds()
        let format = self.format
        let outDir = frontend.output.batch.outDir
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
        let jobs = max(1, min(frontend.output.batch.jobs ?? availableProcessors(), captures.count))
        let progress = BatchProgress()
        let results = ResultBox(count: captures.count)
        let next = IndexBox()
        let totalBytes = captures.reduce(Int64(0)) { total, set in set.paths.reduce(total) { $0 + (FileSystem.size(of: $1) ?? 0) } }
        let group = DispatchGroup()
        let frontend = self.frontend
        let captures = self.captures
        // One merged stream of several captures says which capture each row came from: the
        // `capture` column leads the default columns (asked-for --fields are kept as given).
        let fields = isMergedDefault ? [Field.capture] + frontend.fields : frontend.fields
        let isMerged = merged != nil
        let waiters = Signals.Waiters()
        for _ in 0..<jobs {
            DispatchQueue.global().async(group: group) {
                // A signal stops the scheduling: captures not started get no output at all.
                while !Signals.stop, let i = next.take(below: captures.count) {
                    let result = waiters.waiting {
                        BatchRunner.analyse(captures[i], index: i, frontend: frontend, format: format, fields: fields,
                                            merged: isMerged, progress: progress)
                    }
                    results.set(i, result)
                }
            }
        }
        let showProgress = isatty(2) == 1 && !frontend.output.quiet
        while group.wait(timeout: .now() + 0.25) == .timedOut {
            if showProgress { drawProgress(progress, total: captures.count, totalBytes: totalBytes, started: started) }
            // A job waiting on an idle FIFO or pipe would not see the stop until data came.
            if Signals.stop { waiters.interrupt() }
        }
        if showProgress { Diagnostics.raw("\r\u{1B}[K") }

        var code = Frontend.Exit.ok
        var summary = RunStats()
        var failures = 0, damaged = 0, upToDate = 0
        if let merged, format != .ndjson, !frontend.output.connections {
            TableWriter(format: TableFormat(format), output: merged, options: frontend.exportOptions, fields: fields).writeHeader()
        }
        var notStarted = 0
        for (i, r) in results.all.enumerated() {
            guard r.started else { notStarted += 1; continue }
            let path = captures[i].pieces.count == 1 ? captures[i].pieces[0].path : captures[i].name
            for note in r.notes { Diagnostics.warning(note) }
            summary.merge(r.stats)
            switch r.status {
            case .ok: break
            case .interrupted:
                Diagnostics.warning(frontend.output.batch.outDir != nil
                    ? "'\(path)': interrupted; no output written for it (the next run analyses it again)"
                    : "'\(path)': interrupted; the output holds what was analysed of it")
            case .upToDate: upToDate += 1
            case .damaged(let message):
                damaged += 1
                Diagnostics.warning("'\(path)' is damaged: \(message); what came before was analysed")
                if frontend.input.strict { code = max(code, Frontend.Exit.damaged) }
            case .failed(let message):
                failures += 1
                Diagnostics.error(message)
                code = max(code, Frontend.Exit.badInput)
            case .outputFailed(let message):
                failures += 1
                Diagnostics.error(message)
                code = max(code, Frontend.Exit.outputFailed)
            }
            merged?.write(r.rendered)
        }
        do { try merged?.commit() } catch {
            Diagnostics.error(error.message)
            return Frontend.Exit.outputFailed
        }
        if Signals.stop {
            if notStarted > 0 { Diagnostics.warning("interrupted: \(notStarted) of \(captures.count) captures were not started") }
            code = max(code, ExitStatus.interrupted.rawValue)
        }
        if !frontend.output.quiet {
            let seconds = monotonicSeconds() - started
            let pieces = captures.reduce(0) { $0 + $1.pieces.count }
            var line = "icy-sniff: \(pieces) captures"
            if pieces > captures.count { line += " in \(captures.count) set\(captures.count == 1 ? "" : "s")" }
            line += " (\(failures) failed, \(damaged) damaged"
            if upToDate > 0 { line += ", \(upToDate) up to date" }
            if skippedNonCaptures > 0 { line += ", \(skippedNonCaptures) other files skipped" }
            line += "), \(summary.packets) packets, \(summary.transactions) HTTP transactions in \(seconds.fixed(2)) s"
                + Summary.anomalies(summary)
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

    /// Analyses one set on the calling thread (its pieces in turn, one pipeline); everything it
    /// creates stays on that thread.
    static func analyse(_ set: CaptureSet, index: Int, frontend: Frontend, format: OutputFormat, fields: [Field],
                        merged: Bool, progress: BatchProgress) -> CaptureResult {
        var result = CaptureResult()
        result.started = true
        let sizes = set.paths.map { FileSystem.size(of: $0) ?? 0 }
        let size = sizes.reduce(0, +)
        defer { progress.finish(index, size: size) }
        var outputPath: String? = nil
        if let outDir = frontend.output.batch.outDir {
            let path = FileSystem.join(outDir, set.name + "." + format.fileExtension)
            outputPath = path
            if !frontend.output.batch.force, let outTime = FileSystem.modificationTime(of: path),
               set.paths.allSatisfy({ FileSystem.modificationTime(of: $0).map { outTime >= $0 } ?? false }) {
                result.status = .upToDate
                return result
            }
            try? FileSystem.makeDirectories(FileSystem.deletingLastComponent(path))
        }
        let out: OutputFile
        do { out = try outputPath.map { p throws(OutputError) in try OutputFile(path: p) } ?? OutputFile(memory: true) } catch {
            result.status = .outputFailed(error.message)
            return result
        }
        var factory = frontend.sinkFactory(format: format)
        factory.fields = fields
        factory.writesHeader = !merged
        let (head, sink) = factory.make(writingTo: out)
        // One core per capture: the jobs use the others.
        var runOptions = AnalysisRun.Options()
        runOptions.pipeline = frontend.pipelineOptions
        if let beside = CaptureList.keyLogBeside(set.paths.first ?? ""), !frontend.input.keylog.contains(beside) {
            // NAME.keys beside NAME.pcap (as captures/ lays out its samples), with --keylog's
            // (which are read again for this set; the run's KeyLog holds only theirs).
            do { runOptions.pipeline.keyLog = try KeyLog(paths: frontend.input.keylog + [beside]) } catch {
                result.notes.append("\(beside): \(error.message); the capture is read without it")
            }
        }
        runOptions.captureFilter = frontend.input.filter
        runOptions.fileReader = frontend.input.fileReader
        runOptions.maxPackets = frontend.input.count
        let run = AnalysisRun(sink: head, options: runOptions)
        run.driver.shouldStop = { Signals.stop }
        var done: Int64 = 0
        var current = ""
        let outcomes = run.run([set]) { source in
            if source.name != current {
                // The bytes of the pieces already read, plus the position in this one.
                if !current.isEmpty, let i = set.paths.firstIndex(of: current) { done += sizes[i] }
                current = source.name
            }
            progress.update(index, position: done + source.inputPosition)
        }
        result.notes += outcomes.compactMap(\.continuity)
        // The set's worst outcome is its status (a failed piece fails it, as a damaged one damages it).
        for outcome in outcomes {
            switch outcome.status {
            case .completed: break
            case .interrupted: result.status = .interrupted
            case .damaged(let message): if case .failed = result.status {} else { result.status = .damaged(message) }
            case .empty: if case .ok = result.status, outcomes.count == 1 { result.status = .damaged("empty file, no packets") }
            case .failed(let message): result.status = .failed(message)
            }
        }
        // Nothing could be read: no output is committed (an earlier one stays as it was). Nor
        // for a capture a signal stopped, in its own file: a half output would look up to date.
        guard outcomes.contains(where: \.analysed) else { return result }
        if case .interrupted = result.status, outputPath != nil { return result }
        run.finish()
        let comments = outcomes.compactMap { $0.outputComment(signalled: true) } + result.notes
        do {
            try sink.finish(comment: comments.isEmpty ? nil : comments.joined(separator: "; "))
            try out.commit()
        } catch {
            result.status = .outputFailed(error.message)
        }
        result.stats = run.pipeline.stats
        if merged { result.rendered = out.takeBytes() }
        return result
    }

    private func runMergedHAR() -> Int32 {
        var single = frontend
        single.sets = captures
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
