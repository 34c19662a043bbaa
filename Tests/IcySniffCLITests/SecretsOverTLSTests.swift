import Foundation
import Testing

/// The planted secrets of issue 30 over decrypted TLS, from a real nginx and curl
/// (scripts/record-secrets-sample): HTTP/2 over TLS 1.3 and HTTP/1.1 over TLS 1.2, each request
/// with secret query parameters, a Cookie, an Authorization header and a Referer with a token;
/// nginx answers with a Set-Cookie and a Location with a signature. Every output mode of the
/// binary is grepped for them (the unit tests cover HTTP/1.1 and h2c); with --keep-secrets the
/// HAR and -V keep them. The key log itself never appears either.
@Suite struct SecretsOverTLSTests {
    static let secrets = ["hunter2pw", "keyv4lue", "s3cr3tcookie", "t0ps3cr3t", "reft0ken", "setc00kie", "s1gvalue"]

    @Test(.enabled(if: CLI.isRoot, "tcpdump on the loopback needs root"), .hangLimit)
    func noSecretInAnyOutputOfDecryptedTLS() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let pcap = dir.appendingPathComponent("secrets.pcap").path, keys = dir.appendingPathComponent("secrets.keys").path
        // Below the kernel's ephemeral range (32768-60999 here), where any client socket of a test
        // running beside this one may hold the port nginx is to listen on; ReportTests takes 20000-29999.
        let port = String(10000 + Int(getpid() % 10000))
        let record = try CLI.run([pcap, port], executable: CLI.packageRoot.appendingPathComponent("scripts/record-secrets-sample").path)
        try #require(record.status == 0, "\(record.stderr)")
        let keyMaterial = try String(contentsOfFile: keys, encoding: .utf8).split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) }
        #expect(keyMaterial.count >= 5)

        let base = ["-r", pcap, "--keylog", keys]
        let modes: [(String, [String])] = [
            ("table", ["--format", "table"]), ("tsv", ["--format", "tsv"]), ("csv", ["--format", "csv"]),
            ("ndjson", ["--format", "ndjson"]), ("all fields", ["--format", "tsv", "--fields", "time,url,path,host,status,flags"]),
            ("heads", ["-V"]), ("har", ["--har", "--bodies"]), ("connections", ["--connections", "--format", "ndjson"]),
            ("report", ["report"]), ("report json", ["report", "--format", "json"]),
        ]
        var decrypted = 0
        for (name, args) in modes {
            let arguments = args.first == "report" ? ["report"] + base + args.dropFirst() : base + args
            let r = try CLI.run(arguments)
            #expect(r.status == 0, "\(name): \(r.stderr)")
            let text = r.text + r.stderr
            #expect(!r.text.isEmpty, "\(name)")
            for secret in Self.secrets { #expect(!text.contains(secret), "\(name) shows \(secret)") }
            for key in keyMaterial { #expect(!text.lowercased().contains(key.lowercased()), "\(name) shows key material") }
            if name == "har" {
                decrypted = text.components(separatedBy: "\"request\":").count - 1
                #expect(text.contains("q=ok") && text.contains("page=2"), "what is not secret stays")
            }
        }
        #expect(decrypted == 4, "the four requests were decrypted (HTTP/2 over TLS 1.3, HTTP/1.1 over TLS 1.2)")
        for args in [["--har"], ["-V"]] {
            let kept = try CLI.run(base + args + ["--keep-secrets"])
            for secret in Self.secrets { #expect(kept.text.contains(secret), "\(args) --keep-secrets lacks \(secret)") }
        }
    }
}
