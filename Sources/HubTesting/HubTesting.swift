import NIOSSL
import X509
import NIOHTTP1
