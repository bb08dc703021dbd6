
B	head_sinkJ¥±Ç¿