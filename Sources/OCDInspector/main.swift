import Foundation
import OCDInspectorKit

exit(OCDCommand.run(arguments: Array(CommandLine.arguments.dropFirst()), console: .standard))
