from ._optimus import Converter as Converter
from ._optimus import DecodeError as DecodeError
from ._optimus import EncodeError as EncodeError
from ._optimus import OptimusError as OptimusError
from ._optimus import Schema as Schema
from ._optimus import SchemaError as SchemaError

__all__ = ["Schema", "Converter", "OptimusError", "DecodeError", "EncodeError", "SchemaError"]
__version__: str
