
JD[ё]BіRB>«BЕf‹B±ЮB‡kТ@ОFBъBыы<Bs%Bд1юA(*.B<Л/ByўAЯ цA;~ЦAдћ’B