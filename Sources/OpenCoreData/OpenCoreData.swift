// OpenCoreData: Apple's Core Data API for every platform Swift runs on.
//
// This module is a facade over `OpenCoreDataCore`. Foundation on Linux also declares
// `NSPredicate`, `NSComparisonPredicate`, `NSCompoundPredicate`, `NSExpression` and
// `NSSortDescriptor` (with their useful initializers unavailable). Importing those classes by name
// here makes OpenCoreData's declarations win over Foundation's in any file that imports both
// modules, in type position as well as in expressions.

@_exported import OpenCoreDataCore
@_exported import class OpenCoreDataCore.NSPredicate
@_exported import class OpenCoreDataCore.NSComparisonPredicate
@_exported import class OpenCoreDataCore.NSCompoundPredicate
@_exported import class OpenCoreDataCore.NSExpression
@_exported import class OpenCoreDataCore.NSSortDescriptor
