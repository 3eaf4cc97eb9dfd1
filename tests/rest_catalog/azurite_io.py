"""pyiceberg's PyArrowFileIO for tables on azurite (`abfss://<container>@<account>.dfs.core.windows.net/...`):
pyiceberg 0.12 hands pyarrow the container with the account host attached, and reaches azurite only
through `adls.*-storage-authority`; this maps the URI to `<container>/<path>` on an AzureFileSystem
at `azurite.endpoint` (`http://127.0.0.1:<port>/<account>`) with `adls.account-key`.
"""

import urllib.parse

from pyarrow.fs import AzureFileSystem
from pyiceberg.io.pyarrow import PyArrowFileIO

AZURE = ("abfs", "abfss", "wasb", "wasbs")


class AzuriteFileIO(PyArrowFileIO):
    @staticmethod
    def parse_location(location, properties=None):
        uri = urllib.parse.urlparse(location)
        if uri.scheme in AZURE:
            container = uri.netloc.split("@", 1)[0]
            return uri.scheme, uri.netloc, f"{container}{uri.path}"
        return PyArrowFileIO.parse_location(location, properties or {})

    def _initialize_fs(self, scheme, netloc=None):
        if scheme not in AZURE:
            return super()._initialize_fs(scheme, netloc)
        endpoint = urllib.parse.urlsplit(self.properties["azurite.endpoint"])
        account = endpoint.path.strip("/")
        return AzureFileSystem(
            account_name=account,
            account_key=self.properties["adls.account-key"],
            blob_storage_authority=endpoint.netloc,
            dfs_storage_authority=endpoint.netloc,
            blob_storage_scheme=endpoint.scheme,
            dfs_storage_scheme=endpoint.scheme,
        )
