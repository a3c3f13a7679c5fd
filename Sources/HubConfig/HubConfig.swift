import Yams
import JWTKit
