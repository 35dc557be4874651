/// Who wrote a transaction, as persistent history records it: the writing context's
/// `transactionAuthor` and `name`. Passed with each save and batch request, never stored on a
/// request, so one request can run in several contexts at once.
struct TransactionAuthor: Sendable {
    /// The context's `transactionAuthor`.
    var author: String?
    /// The context's `name`.
    var contextName: String?
}
