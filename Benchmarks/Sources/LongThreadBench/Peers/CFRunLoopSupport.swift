import CoreFoundation

/// The pieces both CF peers share, written as CF on Linux needs them.
enum CFRunLoopSupport {
    /// A version-1 source whose port is -1: it keeps the mode alive (so `CFRunLoopRunInMode`
    /// sleeps instead of returning `finished`), costs no descriptor and never fires. Not
    /// `SocketPort`, which would open a TCP listener and start CF's socket thread.
    static func makeKeepAliveSource() -> CFRunLoopSource {
        var context = CFRunLoopSourceContext1()
        context.version = 1
        context.getPort = { _ in -1 }
        return withUnsafeMutablePointer(to: &context) {
            $0.withMemoryRebound(to: CFRunLoopSourceContext.self, capacity: 1) {
                CFRunLoopSourceCreate(nil, 0, $0)
            }
        }
    }

    /// Runs the current thread's loop until `shouldExit` says so. The timeout is "infinite"
    /// (above CF's ~5e8 s threshold): any finite one arms a libdispatch timer on every run.
    static func runUntil(_ shouldExit: () -> Bool) {
        while !shouldExit() {
            _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 1e10, false)
        }
    }
}
