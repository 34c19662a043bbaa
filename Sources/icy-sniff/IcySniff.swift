import ArgumentParser
import IcySniffCore
#if canImport(Glibc)
import Glibc
#endif

@main
struct IcySniff: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "icy-sniff",
        abstract: "Passive HTTP/1.x, HTTP/2 and HTTP/3 traffic analyzer, HTTPS and QUIC too: requests, responses, timings, cache freshness, TLS, HAR.",
        version: IcySniffVersion.current,
        subcommands: [Analyze.self, ReportCommand.self, DiffCommand.self],
        defaultSubcommand: Analyze.self
    )

    /// `icy-sniff --help` shows the options of the default command, which is what people run.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments == ["-h"] || arguments == ["--help"] || arguments == ["help"] {
            print(helpMessage(for: Analyze.self).replacingAll("icy-sniff analyze", "icy-sniff [analyze]"))
            print("""

            SUBCOMMANDS:
              analyze (default)       Analyse captures or a live interface.
              report                  Caching and connection report of captures.
              diff                    What changed between two captures, HARs or NDJSON files.

              See 'icy-sniff help <subcommand>' for detailed help.
            """)
            return
        }
        Signals.install()
        var command: ParsableCommand
        do {
            command = try parseAsRoot(arguments)
            try command.run()
        } catch {
            exit(withError: error)
        }
    }
}
