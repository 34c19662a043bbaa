import CIcyShims

/// One analysis, assembled in one place: a `Pipeline` over a sink chain, the `CaptureDriver` that
/// feeds it, and for files on a machine with a second core the `ExportThread` that runs the sink
/// chain there (and the TLS decryption of bulk data beside it). `analyze`, its batch runs, `report`
/// and `diff` each build one per output instead of wiring the three themselves.
///
/// Input: capture sets (`run(_:)`), or packets a live source hands to `pipeline`. Output: the sink
/// chain's calls (on the export thread when there is one); `InputOutcome`s for the sets read.
/// `finish()` ends what is open and waits until the sink chain has had every call.
public final class AnalysisRun {
    public struct Options {
        public var pipeline = PipelineOptions()
        /// The BPF filter files and interfaces are read through (`-f`).
        public var captureFilter: String? = nil
        /// How regular pcap files are read (`--file-reader`).
        public var fileReader: PcapSource.FileReader = .mapped
        /// Stop after this many packets (`-c`).
        public var maxPackets: UInt64? = nil
        /// Files: the export stage and bulk decryption on a second core, when there is one. Not
        /// for live captures (rows must not wait for a batch) nor for chains that read open
        /// connections (`--connections` lists them as they end, on the pipeline's thread).
        public var useSecondCore = false
        public init() {}
    }

    public let pipeline: Pipeline
    public var driver: CaptureDriver
    private let exportThread: ExportThread?

    public init(sink: TransactionSink, options: Options) {
        let second = options.useSecondCore && availableProcessors() > 1
        exportThread = second ? ExportThread(sink: sink) : nil
        var pipelineOptions = options.pipeline
        // TLS application data in bulk is decrypted on the second core too, once 1 MiB of
        // records came: a capture smaller than that gains nothing from a thread, and every MiB
        // opened before the thread starts is AES on the pipeline's thread, the critical path (8
        // MiB was 21 M instructions of it on the 104 MB TLS twin).
        if second { pipelineOptions.decryptOnSecondThreadAfter = 1 << 20 }
        // Its whole-body inflates too, where only sizes are wanted (`HTTPMessage.settleDecoding`).
        if exportThread != nil { pipelineOptions.http.settleDecodingOnExport = true }
        pipeline = Pipeline(sink: exportThread ?? sink, options: pipelineOptions)
        driver = CaptureDriver(captureFilter: options.captureFilter, maxPackets: options.maxPackets)
        driver.fileReader = options.fileReader
    }

    /// Reads the sets in turn. Separate captures are never one stream: what is open at the end of
    /// one ends there. Stops at an outcome that stops the run, or when `driver.shouldStop` says so.
    public func run(_ sets: [CaptureSet], progress: ((PcapSource) -> Void)? = nil) -> [InputOutcome] {
        var outcomes: [InputOutcome] = []
        for (i, set) in sets.enumerated() {
            if i > 0 { pipeline.breakContinuity(marking: nil) }
            outcomes += driver.run(set, through: pipeline, progress: progress)
            if outcomes.last?.stopsRun == true || driver.shouldStop() { break }
        }
        return outcomes
    }

    /// Ends the open connections (their partial transactions flagged) and waits until the sink
    /// chain has consumed everything; the sinks are then the caller's again, on its thread.
    public func finish() {
        pipeline.finish()
        exportThread?.finish()
    }

    /// Stops the export thread without ending the open connections (an early return whose output
    /// is not written).
    public func abandon() { exportThread?.finish() }
}

/// Processors this process may run on (its affinity mask, as `nproc` counts them).
public func availableProcessors() -> Int { Int(icy_available_cpus()) }
