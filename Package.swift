// swift-tools-version:6.0
import PackageDescription

// The folders are the pipeline: Capture → Decode → Reassembly → Session/TLS → HTTP, HTTP2 →
// Analysis → Export, and Decode → QUIC → HTTP3 → Analysis (docs/ARCHITECTURE.md).
// C libraries come from Debian's -dev packages (libpcap-dev, zlib1g-dev, libbrotli-dev, libzstd-dev,
// libdeflate-dev, libssl-dev for libcrypto,
// libnghttp2-dev for HPACK, libnghttp3-dev for QPACK).
let package = Package(
    name: "icy-sniff",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "icy-sniff", targets: ["icy-sniff"]),
        .library(name: "IcySniffCore", targets: ["IcySniffCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // The web view's server (--serve): SwiftNIO's HTTP/1.1 server, in a target of its own.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        // The AEAD, HKDF and QUIC header protection: BoringSSL as swift-crypto vendors it (4.x has
        // the VAES code; Sources/CIcyCrypto/icy_boringssl.c says why, and why through this package).
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
    ],
    targets: [
        .systemLibrary(name: "CPcap", pkgConfig: "libpcap", providers: [.apt(["libpcap-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CBrotli", pkgConfig: "libbrotlidec", providers: [.apt(["libbrotli-dev"])]),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        // Whole-buffer inflate for the common small gzip/deflate body (2-3x zlib's speed).
        .systemLibrary(name: "CDeflate", pkgConfig: "libdeflate", providers: [.apt(["libdeflate-dev"])]),
        // HPACK (RFC 7541): libnghttp2's header inflater, the decoder curl and nginx rely on.
        .systemLibrary(name: "CNghttp2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        // QPACK (RFC 9204): libnghttp3's decoder, from the same project as the HPACK one.
        .systemLibrary(name: "CNghttp3", pkgConfig: "libnghttp3", providers: [.apt(["libnghttp3-dev"])]),
        // Small C helpers that are awkward from Swift (a FILE* over a gzip stream for libpcap).
        .target(name: "CIcyShims", dependencies: ["CZlib", "CZstd"],
                linkerSettings: [.linkedLibrary("lz4"), .linkedLibrary("lzma"), .linkedLibrary("bz2")]),
        // TLS decryption: thin wrappers over BoringSSL (the AEAD of every record and packet, HKDF,
        // QUIC header protection: icy_boringssl.c) and OpenSSL's libcrypto (Debian's libssl-dev:
        // TLS 1.2's PRF and CBC suites, SHA-256). No cryptography of our own.
        .target(name: "CIcyCrypto", dependencies: [.product(name: "Crypto", package: "swift-crypto")],
                linkerSettings: [.linkedLibrary("crypto")]),
        // No unsafe flags on the library: SwiftPM refuses them in a package that is depended upon
        // by version (Tests/IcySniffCLITests/DependencyTests builds such a package). Exclusivity
        // is checked here in every build; the shipped release build (scripts/build-release)
        // turns the checks off with -Xswiftc -enforce-exclusivity=unchecked: they cost about a
        // third of a run (NDJSON of an 825 MB capture: 6.8 s with them, 4.4 s without).
        .target(
            name: "IcySniffCore",
            dependencies: ["CPcap", "CZlib", "CBrotli", "CZstd", "CDeflate", "CIcyShims", "CIcyCrypto", "CNghttp2", "CNghttp3"]
        ),
        // --serve: the web view (a page embedded in the binary, its JSON API and its live feed)
        // over SwiftNIO. Kept out of IcySniffCore, whose one package is swift-crypto (for BoringSSL).
        .target(
            name: "IcySniffServe",
            dependencies: [
                "IcySniffCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            // The page: its HTML, its style, and its script as ES modules (app.js imports the rest).
            resources: [.embedInCode("Page/index.html"), .embedInCode("Page/app.css")]
                + ["app", "util", "state", "records", "filters", "columns", "list", "menu", "detail", "copy", "waterfall", "files", "live"]
                .map { .embedInCode("Page/\($0).js") }
        ),
        .executableTarget(
            name: "icy-sniff",
            dependencies: [
                "IcySniffCore", "IcySniffServe", "CIcyShims",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            // Release builds: the Swift runtime linked in (calls into it skip the PLT and start-up
            // skips resolving its symbols: ~4 ms per run, ~6% of a large capture's time), and
            // mimalloc (Debian's libmimalloc-dev) as malloc: transactions are made on the pipeline's
            // thread and freed on the export thread, which defeats glibc's per-thread caches
            // (NDJSON -8%, HAR -13% on the 300 MB benchmark; docs/BENCHMARK.md). Linked by the
            // toolchain's lld (gold cannot) with the relative relocations packed (DT_RELR; glibc
            // 2.36, Debian 12's, reads them): the 62,000 of the Swift metadata and BoringSSL were
            // 1.5 MB of RELA entries, read at every start and resident from then on; packed, 13 KB.
            // Every run's peak RSS 1.8-2.2 MiB lower (docs/BENCHMARK.md, "Build").
            linkerSettings: [.unsafeFlags(["-static-stdlib", "-l_FoundationCollections", "-l_FoundationCShims", "-lswiftSynchronization",
                                           "-lmimalloc", "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"],
                                          .when(platforms: [.linux], configuration: .release))]
        ),
        .testTarget(name: "IcySniffCoreTests", dependencies: ["IcySniffCore", "CZlib", "CNghttp2", "CIcyCrypto"]),
        .testTarget(name: "IcySniffCLITests", dependencies: ["icy-sniff"]),
        .testTarget(name: "IcySniffServeTests", dependencies: ["IcySniffServe", "IcySniffCore"]),
    ]
)
