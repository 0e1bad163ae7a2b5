"""HTTP wire details: headers, bodies, media types, Host and Origin, early answers."""
