//
//  Walk+CoreDataClass.swift
//  Kennel
//
//  This file was generated and should not be edited.
//

import Foundation
#if canImport(CoreData)
import CoreData
#else
import OpenCoreData
#endif

public class Walk: NSManagedObject {

    /// "2001-01": the walk log's section title, derived from the date (not in the model).
    var monthTitle: String {
        guard let date = date else { return "" }
        return Walk.monthFormatter.string(from: date)
    }

    /// Lets the fetched results controller read `monthTitle` as a section key path (on Apple's
    /// platforms `@objc var monthTitle` would do; an override works on both).
    public override func value(forKey key: String) -> Any? {
        if key == "monthTitle" { return monthTitle }
        return super.value(forKey: key)
    }

    private static let monthFormatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM"
        return formatter
    }()
}
