import IcySniffCore
import IcySniffServe
#if canImport(Glibc)
import Glibc
#endif

/// `--serve`: the run's web view — its store (the feed's records, on disk), its server, and the
/// lines that tell the user where it is.
struct WebView {
    let store: FeedStore
    let server: WebServer
    let port: Int

    /// Starts the server before the analysis, so that a live page fills as traffic comes.
    static func start(host: String, port: Int, live: Bool, bodies: Bool, input: String, devices: DeviceDirectory) -> Result<WebView, Frontend.Failure> {
        guard let store = FeedStore() else {
            return .failure(.init(message: "--serve: cannot make its records' file in \(FeedStore.temporaryDirectory) (TMPDIR): \(String(cString: strerror(errno)))", code: ExitStatus.outputFailed.rawValue))
        }
        store.onWriteError = { Diagnostics.error($0) }
        var configuration = WebServer.Configuration()
        configuration.host = host
        configuration.port = port
        configuration.live = live
        configuration.bodies = bodies
        configuration.input = input
        configuration.devices = devices
        if !WebServer.isLoopback(host) { configuration.token = WebServer.makeToken() }
        let server = WebServer(store: store, configuration: configuration)
        // The server's threads do not take SIGINT and SIGTERM: they go to the thread that reads
        // packets, whose waits they interrupt (Signals), and whose loops they stop.
        var blocked = sigset_t(), previous = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGINT)
        sigaddset(&blocked, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        do {
            let bound = try server.start()
            return .success(WebView(store: store, server: server, port: bound))
        } catch {
            server.stop()
            return .failure(.init(message: "--serve: cannot listen on \(host):\(port): \(error)", code: ExitStatus.outputFailed.rawValue))
        }
    }

    var url: String { server.url(port: port) }

    /// Where the page is; on another address than the loopback, that it needs the token.
    func announce() {
        Diagnostics.info("icy-sniff: the web view is at \(url)")
        if server.configuration.token != nil {
            Diagnostics.info("icy-sniff: --serve listens on \(server.configuration.host), not only this machine: the page and its API answer only requests with this run's token (in the address above); redaction applies as in the files")
        }
    }

    /// After a file run: the page stays until SIGINT or SIGTERM.
    func serveUntilStopped(transactions: UInt64) {
        store.finish()
        guard !Signals.stop else { return }
        Diagnostics.info("icy-sniff: read to the end: \(transactions) transactions in the web view at \(url); Ctrl-C stops it")
        while !Signals.stop { usleep(100_000) }
    }

    func stop() {
        store.finish()
        server.stop()
    }
}
