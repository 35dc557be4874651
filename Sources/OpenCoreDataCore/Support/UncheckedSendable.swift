/// Carries a non-Sendable value into a block that runs on another queue (a context's own queue,
/// or the background queue a store is added on), where the caller guarantees that only that block
/// uses it.
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
