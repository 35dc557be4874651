import Foundation

/// Sorted results in columnar form for a fetched results controller, when SQL answers the request
/// whole: the predicate exactly (`SQLServerPrefilter.isExact`) and the order
/// (`SQLServerOrdering`). One query of the keys, the sort columns and the section column, in order;
/// no object or row values made per row.
extension SQLServerStore {
    func readSortedRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription,
                        sectionNameKeyPath: String?, chunkSize: Int) throws -> SortedRows? {
        guard let plan = readPlan(for: entity), let mapping = schema.mapping(for: entity),
              let sorts = request.sortDescriptors, !sorts.isEmpty else { return nil }
        let selection = selection(for: request, entity: entity)
        guard selection.answersWhole else { return nil }
        // Z_ENT only when rows may be of subentities.
        let readsEntity = request.includesSubentities && mapping.numbersWithSubentities.count > 1
        var columns = readsEntity ? ["Z_PK", "Z_ENT"] : ["Z_PK"]
        func column(_ key: String) -> (index: Int, attribute: NSAttributeDescription)? {
            guard !key.contains("."), let attribute = entity.frozenPropertiesByName[key] as? NSAttributeDescription,
                  let name = mapping.columnsBySlot[attribute.slot], attribute.attributeType != .transformableAttributeType else { return nil }
            if let existing = columns.firstIndex(of: name) { return (existing, attribute) }
            columns.append(name)
            return (columns.count - 1, attribute)
        }
        var sortColumns: [(index: Int, kind: SortValue.Kind)] = []
        for descriptor in sorts {
            guard let key = descriptor.key, let (index, attribute) = column(key) else { return nil }
            sortColumns.append((index, SortValue.Kind(attribute)))
        }
        var sectionColumn: (index: Int, attribute: NSAttributeDescription)?
        if let sectionNameKeyPath {
            guard let found = column(sectionNameKeyPath) else { return nil }
            sectionColumn = found
        }
        let sql = "SELECT \(columns.joined(separator: ", ")) FROM \(plan.table) WHERE \(selection.condition)\(selection.suffix(request))"
        let fetched = try withReadConnection { try $0.run(sql, selection.values) }
        let kinds = sortColumns.map(\.kind)
        var rows = SortedRows()
        rows.origins = [SortedRows.Origin(entity: entity, store: self)]
        var originByNumber: [Int64: Int] = [Int64(mapping.number): 0]
        var chunk = SortedRowsChunk(kinds: kinds, capacity: chunkSize)
        var sections = SectionRuns()
        var previousSection: SQLServerValue?
        for (rowIndex, row) in fetched.enumerated() {
            guard row.count == columns.count, let key = SQLServerValueCoding.integer(row[0]) else { continue }
            let number = readsEntity ? SQLServerValueCoding.integer(row[1]) ?? Int64(mapping.number) : Int64(mapping.number)
            var origin = 0
            if let known = originByNumber[number] {
                origin = known
            } else if let member = schema.entity(number: Int(number)) {
                origin = rows.origins.count
                rows.origins.append(SortedRows.Origin(entity: member, store: self))
                originByNumber[number] = origin
            }
            chunk.keys.append(SortedRows.key(primaryKey: key, origin: origin))
            for (position, sortColumn) in sortColumns.enumerated() {
                switch (sortColumn.kind, row[sortColumn.index]) {
                case (.integer, .integer(let value)): chunk.columns[position].appendInteger(value, isNull: false)
                case (.integer, .boolean(let value)): chunk.columns[position].appendInteger(value ? 1 : 0, isNull: false)
                case (.integer, _): chunk.columns[position].appendInteger(0, isNull: true)
                case (.double, .real(let value)): chunk.columns[position].appendDouble(value)
                case (.double, _): chunk.columns[position].appendDouble(.nan)
                default: return nil
                }
            }
            if let sectionColumn {
                let value = row[sectionColumn.index]
                if rowIndex == 0 || value != previousSection {
                    try sections.append(SectionNaming.name(from: SQLServerValueCoding.decode(value, for: sectionColumn.attribute)), row: rowIndex)
                    previousSection = value
                } else {
                    sections.repeatLast()
                }
            }
            rows.keepIfFull(&chunk, kinds: kinds, capacity: chunkSize)
        }
        rows.keepLast(&chunk)
        rows.sections = sectionColumn == nil ? (rows.count > 0 ? [("", rows.count)] : []) : sections.runs
        return rows
    }
}
