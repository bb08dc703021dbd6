

J@cณKRBฌAVฤl:เว‘ยF=tล๗บมAZ;{C@bฤม5FฟฦEพ	ภว=A๊>U?Gย?b5sมH4
Dผ