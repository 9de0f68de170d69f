curl --http2 -F 'title=Holiday photo' -F 'photo=@photos/beach.jpg' \
  -F 'meta=@meta.json;type=application/json' https://media.example/upload
curl -X PUT --data-binary @dump.bin -H 'Content-Type: application/octet-stream' https://media.example/raw/1
