import Foundation

/// UIKit's index path spelling (`row`, `item`, `section`), which Foundation on Linux lacks.
extension IndexPath {
    /// An index path of a row in a section, as UIKit spells it.
    public init(row: Int, section: Int) { self.init(pair: section, row) }
    /// An index path of an item in a section, as UIKit spells it.
    public init(item: Int, section: Int) { self.init(pair: section, item) }
    /// Two indexes appended one by one: Foundation then keeps them inline, where building from an
    /// array allocates (four times the cost, for every index path a controller reports).
    private init(pair first: Int, _ second: Int) {
        self.init()
        append(first)
        append(second)
    }
    /// The section of a two-element index path.
    public var section: Int { self[0] }
    /// The row of a two-element index path.
    public var row: Int { self[1] }
    /// The item of a two-element index path.
    public var item: Int { self[1] }
}
