/// Exit statuses of a run (documented in `icy-sniff --help` and README).
public enum ExitStatus: Int32, Sendable, Comparable {
    case ok = 0
    /// With `--strict`: a capture was damaged.
    case damaged = 1
    /// An input could not be used (missing, not a capture, unsupported link type, bad filter, …).
    case badInput = 2
    /// The output could not be written.
    case outputFailed = 3
    /// Stopped by SIGINT or SIGTERM before the inputs were read to their end (128 + SIGINT, as
    /// shells report it): what was analysed is written, and says so.
    case interrupted = 130

    public static func < (a: ExitStatus, b: ExitStatus) -> Bool { a.rawValue < b.rawValue }
}

/// A line for the user about one input.
public enum Diagnostic: Sendable, Equatable {
    case error(String)
    case warning(String)
}

/// How one input of a run went, as the user should hear it.
public struct InputOutcome: Sendable {
    public enum Status: Sendable, Equatable {
        case completed
        /// Stopped by a signal, a packet count or a duration.
        case interrupted
        /// Readable up to a point; everything before it was analysed.
        case damaged(String)
        /// Empty file: nothing to analyse, not a failure.
        case empty
        /// Could not be used at all.
        case failed(String)
    }
    public var path: String
    public var status: Status
    /// Packets read before it ended.
    public var packets: UInt64 = 0
    /// The failure concerns every input alike (a filter that does not compile): stop the run.
    public var stopsRun = false
    /// A piece of a set that does not continue the one before it (a piece missing, packets
    /// going back in time, a long gap): what the user is told; its connections were ended there.
    public var continuity: String? = nil

    /// Whether any packet of it went through the pipeline.
    public var analysed: Bool {
        switch status {
        case .completed, .interrupted, .damaged: return true
        case .empty, .failed: return false
        }
    }

    /// The diagnostic a user gets for it, if any (`signalled`: the stop came from the user).
    public func diagnostic(signalled: Bool) -> Diagnostic? {
        switch status {
        case .completed: return nil
        case .interrupted:
            return signalled ? .warning("interrupted after \(packets) packets of '\(path)': the output holds what was analysed until then") : nil
        case .damaged(let message):
            return .warning("'\(path)' is damaged after packet \(packets): \(message); the \(packets) packets before it were analysed")
        case .empty: return .warning("'\(path)' is empty: no packets")
        case .failed(let message): return .error(message)
        }
    }

    /// What an output file's comment says of it (a damaged or interrupted capture).
    public func outputComment(signalled: Bool) -> String? {
        switch status {
        case .damaged, .interrupted:
            if case .warning(let text)? = diagnostic(signalled: signalled) { return text }
            return nil
        default: return nil
        }
    }

    /// The exit status it calls for.
    public func exitStatus(strict: Bool) -> ExitStatus {
        switch status {
        case .completed, .interrupted, .empty: return .ok
        case .damaged: return strict ? .damaged : .ok
        case .failed: return .badInput
        }
    }
}

/// The one "analyse these inputs" driver: opens each capture in turn, runs it through a pipeline
/// and says how each went. The analyse, batch and report commands all run their inputs through
/// it; they only choose the sink and print what it returns.
public struct CaptureDriver {
    /// BPF filter applied to every input.
    public var captureFilter: String?
    /// How regular pcap files are read (`--file-reader`).
    public var fileReader: PcapSource.FileReader = .mapped
    /// Stop after this many packets (all inputs together).
    public var maxPackets: UInt64?
    /// Asked between packets: true stops the run (signals, a duration).
    public var shouldStop: () -> Bool = { false }
    /// `-w` with `-r`: where the packets read (that pass the filter) are also written.
    public var packetWriter: PacketWriter? = nil

    public init(captureFilter: String? = nil, maxPackets: UInt64? = nil) {
        self.captureFilter = captureFilter
        self.maxPackets = maxPackets
    }

    /// Runs `paths` in turn through `pipeline` (connections stay open from one to the next, so
    /// several files of one capture are one stream); `pipeline.finish()` is the caller's.
    /// `progress` is called with each source while it is read.
    public func run(_ paths: [String], through pipeline: Pipeline, progress: ((PcapSource) -> Void)? = nil) -> [InputOutcome] {
        var outcomes: [InputOutcome] = []
        for path in paths {
            let outcome = run(path, through: pipeline, progress: progress)
            outcomes.append(outcome)
            if outcome.stopsRun { break }
        }
        return outcomes
    }

    /// Runs the pieces of a set in turn through `pipeline`, as one stream. Where a piece does not
    /// continue the one before (a number of the series missing; its first packet before the
    /// previous piece's last, or more than `CaptureSets.maxGapSeconds` after it), the connections open there are ended and flagged (`capture_piece_missing`,
    /// `capture_discontinuity`) rather than joined to what comes next.
    public func run(_ set: CaptureSet, through pipeline: Pipeline, progress: ((PcapSource) -> Void)? = nil) -> [InputOutcome] {
        var outcomes: [InputOutcome] = []
        for (i, piece) in set.pieces.enumerated() {
            var note: String? = nil
            let continues = i > 0 && outcomes.last?.analysed == true
            // A stream was not probed: its first packet is read once it is open.
            let stream = piece.isStream
            if continues && !stream {
                note = breakIfDiscontinuous(piece, first: piece.probe?.firstPacket, after: set.pieces[i - 1], in: set, pipeline: pipeline)
            }
            let midstreamBefore = pipeline.connectionsPickedUpMidstream
            var outcome = run(piece.path, through: pipeline, progress: progress) { source in
                guard continues && stream else { return }
                note = breakIfDiscontinuous(piece, first: source.peekTime(), after: set.pieces[i - 1], in: set, pipeline: pipeline)
            }
            // In a later piece, a connection that begins mid-stream began in no piece before it:
            // one is missing or was not joined to the set, or the capture lost its handshake.
            let midstream = pipeline.connectionsPickedUpMidstream - midstreamBefore
            if i > 0 && midstream > 0 {
                let what = midstream == 1 ? "1 connection begins" : "\(midstream) connections begin"
                let text = "\(what) mid-stream in it, not in a piece before it (a piece missing or not in the set, or handshakes the capture lost); \(midstream == 1 ? "it is" : "they are") flagged \(Weird.midstreamPickup.rawValue)"
                note = note.map { $0 + "; " + text } ?? "'\(piece.path)': " + text
            }
            outcome.continuity = note
            outcomes.append(outcome)
            if outcome.stopsRun { break }
        }
        return outcomes
    }

    private func breakIfDiscontinuous(_ piece: CaptureSet.Piece, first: Timestamp?, after previous: CaptureSet.Piece,
                                      in set: CaptureSet, pipeline: Pipeline) -> String? {
        let last = pipeline.stats.lastPacket
        var gap = ""
        if let first, let last {
            let seconds = (first.milliseconds(since: last)).rounded() / 1000
            gap = " (\(seconds) s after the last packet before it)"
        }
        let weird: Weird
        let text: String
        if !piece.missingBefore.isEmpty {
            let missing = piece.missingBefore.count == 1 ? "number \(piece.missingBefore[0]) is"
                : "numbers \(piece.missingBefore.first!)–\(piece.missingBefore.last!) are"
            weird = .capturePieceMissing
            text = "'\(piece.path)': a piece of the set '\(set.name)' is missing before it (\(missing) not there)\(gap)"
        } else if let first, let last, first < last {
            weird = .captureDiscontinuity
            text = "'\(piece.path)' starts before '\(previous.path)' ends: not its continuation"
        } else if let first, let last, first.nanoseconds - last.nanoseconds > CaptureSets.maxGapSeconds * 1_000_000_000 {
            weird = .captureDiscontinuity
            text = "'\(piece.path)' starts more than \(CaptureSets.maxGapSeconds) s after '\(previous.path)' ends\(gap)"
        } else {
            return nil
        }
        let ended = pipeline.breakContinuity(marking: weird)
        let what = ended == 1 ? "the connection open there was ended" : "the \(ended) connections open there were ended"
        return text + "; \(what), flagged \(weird.rawValue)"
    }

    /// `opened`: called with the source once it is open, before its first packet is analysed.
    public func run(_ path: String, through pipeline: Pipeline, progress: ((PcapSource) -> Void)? = nil,
                    opened: (PcapSource) -> Void = { _ in }) -> InputOutcome {
        let source: PcapSource
        do {
            source = try PcapSource.open(path: path, filter: captureFilter, reader: fileReader)
        } catch {
            // A signal while waiting to open or read the first bytes (a FIFO, an idle pipe).
            if shouldStop() { return InputOutcome(path: path, status: .interrupted) }
            if case .emptyFile = error { return InputOutcome(path: path, status: .empty) }
            var failed = InputOutcome(path: path, status: .failed(error.message))
            // A filter that does not compile fails every input alike: it is said once.
            if case .badFilter = error { failed.stopsRun = true }
            return failed
        }
        source.saver = packetWriter
        opened(source)
        // pcapng Decryption Secrets Blocks (keys that came with the capture, no option needed) are
        // handed to the pipeline by the source as they are read, before the packets they decrypt.
        let stop = shouldStop
        let outcome = pipeline.run(source, maxPackets: maxPackets) {
            progress?(source)
            return stop()
        }
        var result = InputOutcome(path: path, status: .completed, packets: source.packetsRead)
        switch outcome {
        case .completed: break
        case .interrupted: result.status = .interrupted
        case .damaged(let message): result.status = .damaged(message)
        case .unsupportedLinkType:
            result.status = .failed(CaptureError.unsupportedLinkType(path: path, dlt: source.dlt, name: source.linkTypeName).message)
        }
        return result
    }
}
