import Hummingbird
import JWTKit
import Prometheus
import AsyncHTTPClient
