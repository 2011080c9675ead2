"""`orchestrator status`: the live state of a site's replicas (health, release, image, requests running,
gateway membership), read without changing anything."""
