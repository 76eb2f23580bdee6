import DaemonExample

// `DaemonCommand.main()` at top level would resolve to the synchronous `ParsableCommand.main()`
// (whose default `run()` only prints help). A `let` rules out `ParsableCommand`'s mutating
// synchronous `run()`, so this calls the daemon's async one.
do {
    let command = try DaemonCommand.parse()
    try await command.run()
} catch {
    DaemonCommand.exit(withError: error)
}
