"""Model weights on the controller: the sha256 manifest the servers verify their copies against."""
