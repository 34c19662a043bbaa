import FuzzSupport

@_cdecl("FuzzQUIC_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    runLibFuzzer(argc, argv) { data, size in fuzz(data, size) }
}
