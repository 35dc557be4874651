/// Traps with `message` unless `condition` holds: for misuse of the API, which Apple's Core Data
/// answers with an exception. Unlike `precondition`, the message survives optimized builds, so a
/// user's release build says what to fix. Internal invariants use `assert` instead, which costs
/// nothing in release builds.
@inline(__always)
func coreDataPrecondition(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
                          file: StaticString = #fileID, line: UInt = #line) {
    if _slowPath(!condition()) { coreDataMisuse(message(), file: file, line: line) }
}

/// Traps with `message`: the API was misused in a way Apple's Core Data answers with an
/// exception (see `coreDataPrecondition`).
@inline(never)
func coreDataMisuse(_ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError(message(), file: file, line: line)
}
